// The shared backend contract, run for real against Linux user accounts, ACLs and nft (as root).
import { runBackendContract } from "../../contract/backend";
import { makeWorld, whyNot } from "./harness";

runBackendContract(
  "linux-user (real)",
  async () => {
    const w = await makeWorld();
    return { backend: w.backend, spec: (name) => w.spec(name), teardown: () => w.teardown() };
  },
  { skip: whyNot() },
);
