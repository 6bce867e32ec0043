// The flags every Bun that sbx starts on the host (the CLI, the daemon, the macOS root helper) runs with.
//
// At start Bun reads `bunfig.toml` and `.env*` from the CURRENT directory, which is often a repo: a `preload` there runs
// code inside sbx before sbx's own, and `.env` adds variables (DOCKER_HOST, XDG_*, GIT_CONFIG_*) sbx would trust. With
// these flags Bun reads neither (test/integration/daemon/cli-autostart.test.ts shows both read without them, and
// neither with them, for the CLI and the daemon it starts).
// `--config` takes only the `--config=<path>` form: `--config <path>` makes the path the script.

export const BUN_NO_CWD_CONFIG = ["--no-env-file", "--config=/dev/null"] as const;
