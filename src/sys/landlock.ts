// Landlock's ABI on this kernel, asked through bun:ffi (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION).
// Linux only; null where there is none (another OS, an old kernel, Landlock off, or the call refused).
export function landlockAbi(): number | null {
  try {
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const lib = dlopen("libc.so.6", { syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 } });
    // 444: landlock_create_ruleset on every architecture Linux numbers the generic way (x86_64 and arm64 alike).
    const v = Number(lib.symbols.syscall(444n, 0n, 0n, 1n));
    lib.close();
    return v > 0 ? v : null;
  } catch {
    return null;
  }
}
