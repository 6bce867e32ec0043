// The media type of POST /v1/sandboxes/exec's answer when an exec agent runs the command (the client reads it without loading the daemon).

/** Exec frames (shims/exec-frames.ts), session 0: stdout, stderr, then exit or failed. */
export const EXEC_FRAMES_TYPE = "application/x-sbx-exec-frames";
