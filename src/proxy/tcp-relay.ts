// Host-side TCP → unix-socket relay for user-account sandboxes: the same code the in-sandbox forwarder runs.
export { startTcpRelay, type TcpRelay, type TcpRelayOptions } from "../../shims/relay";
