// Absolute paths of the macOS programs the backend runs (root never resolves names through a PATH).
/** Absolute paths of every program the backend runs: root never resolves names through a PATH. */
export const BIN = {
  sudo: "/usr/bin/sudo",
  dscl: "/usr/bin/dscl",
  sysadminctl: "/usr/sbin/sysadminctl",
  createhomedir: "/usr/sbin/createhomedir",
  pfctl: "/sbin/pfctl",
  chmod: "/bin/chmod",
  chown: "/usr/sbin/chown",
  chflags: "/usr/bin/chflags",
  mkdir: "/bin/mkdir",
  rm: "/bin/rm",
  cat: "/bin/cat",
  tee: "/usr/bin/tee",
  ls: "/bin/ls",
  test: "/bin/test",
  stat: "/usr/bin/stat",
  pkill: "/usr/bin/pkill",
  git: "/usr/bin/git",
  tcpdump: "/usr/sbin/tcpdump",
} as const;
