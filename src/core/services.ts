// Pure: a sandbox's services (`--service NAME=IMAGE`): what a flag may name, checked before anything is made.
import { z } from "zod";
import { SbxError } from "./errors";

/** A service's name: its container's and volumes' names carry it, and `sbx services NAME logs SVC` names it. */
export const SERVICE_NAME = /^[a-z][a-z0-9-]{0,29}$/;
/**
 * A local image reference as docker names one (repo[:tag] or repo@sha256:…). It never starts with '-' (it lands on
 * docker's command line, where that would be a flag) and holds no space or shell character.
 */
export const IMAGE_REF = /^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;
/** How many services one sandbox may have (each is a container in its network namespace). */
export const MAX_SERVICES = 8;

export const ServiceSpecSchema = z.object({ name: z.string().regex(SERVICE_NAME), image: z.string().max(255).regex(IMAGE_REF) }).strict();
export type ServiceSpec = z.infer<typeof ServiceSpecSchema>;
/** A create request's services, as the daemon takes them. */
export const ServicesSchema = z.array(ServiceSpecSchema).max(MAX_SERVICES).default([]);

const HINT = "e.g. --service db=postgres-test:16 (a local image: build it with `docker build -t postgres-test:16 -f FILE .`; sbx pulls nothing)";

/** `--service NAME=IMAGE`, checked: a name, a local image reference. A Dockerfile path is refused with what to do. */
export function parseServiceFlag(flag: string): ServiceSpec {
  const eq = flag.indexOf("=");
  if (eq <= 0) throw new SbxError("usage", `--service ${flag}: give NAME=IMAGE`, { hint: HINT });
  const name = flag.slice(0, eq);
  const image = flag.slice(eq + 1);
  if (!SERVICE_NAME.test(name)) {
    throw new SbxError("usage", `--service ${flag}: '${name}' is not a service name (lowercase letters, digits and -, starting with a letter, at most 30)`, { hint: HINT });
  }
  if (/(^|\/)[^/]*Dockerfile$|\.Dockerfile$|^\.{0,2}\//.test(image)) {
    throw new SbxError("usage", `--service ${flag}: a Dockerfile as a service's image is not supported yet`, {
      hint: `Build it yourself and name the image: docker build -t ${name}-svc -f ${image} . && sbx create … --service ${name}=${name}-svc`,
    });
  }
  if (image.length > 255 || !IMAGE_REF.test(image)) {
    throw new SbxError("usage", `--service ${flag}: '${image}' is not a local image reference`, { hint: HINT });
  }
  return { name, image };
}

/** The refusal of services for a kind that has none (the user-account kinds: no network namespace of their own to share). */
export function servicesRefused(kind: string): SbxError {
  return new SbxError("usage", `--service applies to Docker sandboxes, not --backend ${kind}`, {
    hint: "A service runs as a container in a Docker sandbox's network namespace; a user-account sandbox has none to give it. Use --backend docker, or run the service inside the sandbox yourself.",
  });
}

/** Every `--service` of a create, checked together: distinct names, at most MAX_SERVICES. */
export function parseServiceFlags(flags: readonly string[]): ServiceSpec[] {
  const out = flags.map(parseServiceFlag);
  const seen = new Set<string>();
  for (const s of out) {
    if (seen.has(s.name)) throw new SbxError("usage", `--service ${s.name} is given twice`, { hint: "Give each service its own name." });
    seen.add(s.name);
  }
  if (out.length > MAX_SERVICES) throw new SbxError("usage", `${out.length} services: a sandbox has at most ${MAX_SERVICES}`, { hint: "Leave some out." });
  return out;
}
