// Pure: where a Docker sandbox's image comes from, as its identity keeps it and as the flags of `create` name it.
import { z } from "zod";

export const ImageSourceSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("dockerfile"),
    /** Absolute paths. */
    dockerfile: z.string(),
    context: z.string(),
    /** Build args beyond sbx's USER_* (devcontainer build.args). */
    args: z.record(z.string(), z.string()).optional(),
    from: z.enum(["repo", "flags", "devcontainer"]),
  }),
  z.object({ kind: z.literal("image"), ref: z.string(), from: z.enum(["flags", "devcontainer"]) }),
]);
export type ImageSource = z.infer<typeof ImageSourceSchema>;

/** `--dockerfile`, `--context`, `--image` as the CLI resolved them (paths absolute). */
export interface ImageFlags {
  dockerfile?: string;
  context?: string;
  image?: string;
}

