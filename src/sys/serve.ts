// Options for Bun.serve that bun-types cannot express.

/**
 * Spread into Bun.serve's options for a unix-socket server to turn off its idle limit (by default 10 s without a byte
 * closes the connection, even in the middle of a streamed response). bun-types declare `idleTimeout` only for TCP
 * servers; Bun honours it on unix sockets too (measured with Bun 1.4.5: a response quiet for 75 s arrives whole with
 * it, and is cut at ≈12 s without it). A peer that dies is still seen at once: its end closes the socket.
 */
export const NO_IDLE_TIMEOUT: object = { idleTimeout: 0 };
