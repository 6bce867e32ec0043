// Test-only: checks an event against OCSF 1.8.0 as ocsf-schema.ts transcribes it. Every attribute must be one its class
// or object has (and not deprecated, and of a profile the event says it applies), of that attribute's type (objects
// recursively, arrays element by element, enums by their values, ip_t by its pattern, port_t by its range), every
// required attribute present, every at_least_one/just_one constraint met; the classification must add up
// (category_uid the class's, type_uid = class_uid × 100 + activity_id) and `time` be epoch milliseconds.
import { CLASSES, OBJECTS, TYPES, type AttrSpec, type Shape } from "./ocsf-schema";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The primitive a type is a kind of (`port_t` → `integer_t`, `hostname_t` → `string_t`). */
function base(t: string): string {
  let cur = t;
  for (let i = 0; i < 5 && TYPES[cur]?.type; i++) cur = TYPES[cur]!.type!;
  return cur;
}

function scalarProblem(v: unknown, t: string): string | null {
  const spec = TYPES[t];
  const b = base(t);
  switch (b) {
    case "string_t":
      if (typeof v !== "string") return `a ${t} must be a string, got ${JSON.stringify(v)}`;
      if (spec?.max_len !== undefined && v.length > spec.max_len) return `a ${t} is at most ${spec.max_len} characters`;
      if (spec?.regex !== undefined && !new RegExp(spec.regex).test(v)) return `${JSON.stringify(v)} is not a ${t}`;
      return null;
    case "integer_t":
      if (!Number.isInteger(v) || (v as number) < -(2 ** 31) || (v as number) >= 2 ** 31) return `a ${t} must be a 32-bit integer, got ${JSON.stringify(v)}`;
      break;
    case "long_t":
      if (!Number.isSafeInteger(v)) return `a ${t} must be an integer, got ${JSON.stringify(v)}`;
      break;
    case "float_t":
      if (typeof v !== "number" || !Number.isFinite(v)) return `a ${t} must be a number`;
      break;
    case "boolean_t":
      if (typeof v !== "boolean") return `a ${t} must be true or false`;
      break;
    case "json_t":
      return null;
    default:
      return `type ${t} is not transcribed`;
  }
  if (spec?.range && ((v as number) < spec.range[0] || (v as number) > spec.range[1])) return `a ${t} is in ${spec.range[0]}..${spec.range[1]}, got ${v}`;
  return null;
}

function valueProblems(v: unknown, name: string, spec: AttrSpec, at: string, profiles: readonly string[]): string[] {
  if (spec.a) {
    if (!Array.isArray(v)) return [`${at}: ${name} must be an array`];
    return v.flatMap((x, i) => valueProblems(x, name, { ...spec, a: undefined }, `${at}[${i}]`, profiles));
  }
  if (spec.t === "object") return isObject(v) ? [] : [`${at}: must be an object`];
  const obj = OBJECTS[spec.t];
  if (obj) return isObject(v) ? shapeProblems(v, obj, at, profiles) : [`${at}: a ${spec.t} must be an object`];
  if (/^[a-z_]+$/.test(spec.t) && !spec.t.endsWith("_t")) return [`${at}: object ${spec.t} is not transcribed (add it to ocsf-schema.ts from the schema)`];
  const p = scalarProblem(v, spec.t);
  if (p) return [`${at}: ${p}`];
  if (spec.e && !spec.e.includes(v as number)) return [`${at}: ${v} is not one of ${name}'s values (${spec.e.join(", ")})`];
  return [];
}

/** The sibling an `*_id` has (`activity_id` → `activity_name`, `severity_id` → `severity`), said when the id is 99. */
function sibling(id: string): string {
  const stem = id.slice(0, -3);
  return ["activity", "class", "category", "type"].includes(stem) ? `${stem}_name` : stem;
}

export function shapeProblems(v: Record<string, unknown>, shape: Shape, at: string, profiles: readonly string[]): string[] {
  const out: string[] = [];
  for (const [k, x] of Object.entries(v)) {
    const spec = shape.attrs[k];
    const here = `${at}.${k}`;
    if (!spec) {
      out.push(`${here}: no such attribute`);
      continue;
    }
    if (spec.d) out.push(`${here}: deprecated`);
    if (spec.p && !profiles.includes(spec.p)) out.push(`${here}: of profile ${spec.p}, which metadata.profiles does not apply`);
    if (x === null || x === undefined) {
      out.push(`${here}: null (leave an attribute out instead)`);
      continue;
    }
    out.push(...valueProblems(x, k, spec, here, profiles));
    if (k.endsWith("_id") && x === 99 && shape.attrs[sibling(k)] && typeof v[sibling(k)] !== "string") out.push(`${here}: 99 (Other) without ${sibling(k)} saying what`);
  }
  for (const [k, spec] of Object.entries(shape.attrs)) {
    if (spec.r === "R" && (!spec.p || profiles.includes(spec.p)) && v[k] === undefined) out.push(`${at}.${k}: required, missing`);
  }
  const { at_least_one, just_one } = shape.constraints;
  if (at_least_one && !at_least_one.some((k) => v[k] !== undefined)) out.push(`${at}: needs at least one of ${at_least_one.join(", ")}`);
  if (just_one && just_one.filter((k) => v[k] !== undefined).length !== 1) out.push(`${at}: needs exactly one of ${just_one.join(", ")}`);
  return out;
}

/** Every way an event breaks OCSF 1.8.0 (empty: it validates). */
export function ocsfProblems(e: unknown): string[] {
  if (!isObject(e)) return ["not an object"];
  const cls = CLASSES[e.class_uid as number];
  if (!cls) return [`class_uid ${String(e.class_uid)} is not one sbx writes`];
  const out: string[] = [];
  const metadata = isObject(e.metadata) ? e.metadata : {};
  const profiles = Array.isArray(metadata.profiles) ? (metadata.profiles as string[]) : [];
  out.push(...shapeProblems(e, cls, "event", profiles));
  if (e.category_uid !== cls.category) out.push(`category_uid ${String(e.category_uid)}: class ${String(e.class_uid)} is in category ${cls.category}`);
  if (e.type_uid !== (e.class_uid as number) * 100 + (e.activity_id as number)) out.push(`type_uid ${String(e.type_uid)} is not class_uid × 100 + activity_id`);
  if (e.class_name !== undefined && e.class_name !== cls.name) out.push(`class_name ${String(e.class_name)}: the class is ${cls.name}`);
  if (typeof e.time === "number" && e.time < 1e12) out.push(`time ${e.time} reads as seconds, not milliseconds`);
  if (metadata.version !== "1.8.0") out.push(`metadata.version ${String(metadata.version)}: the schema transcribed is 1.8.0`);
  return out;
}
