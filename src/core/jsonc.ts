// Pure: JSON with comments (// and /* */) and trailing commas, as devcontainer.json and VS Code write it.
import { SbxError } from "./errors";

/** The text with comments and trailing commas blanked out (strings untouched), ready for JSON.parse. */
export function stripJsonc(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (c === ",") {
      // A comma followed only by blanks (and comments, already blanked or skipped later) before } or ] is dropped.
      let j = i + 1;
      for (;;) {
        while (j < text.length && /\s/.test(text[j]!)) j++;
        if (text[j] === "/" && text[j + 1] === "/") {
          while (j < text.length && text[j] !== "\n") j++;
        } else if (text[j] === "/" && text[j + 1] === "*") {
          const end = text.indexOf("*/", j + 2);
          j = end < 0 ? text.length : end + 2;
        } else break;
      }
      out += text[j] === "}" || text[j] === "]" ? " " : ",";
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Parses JSONC; a syntax error names the file. */
export function parseJsonc(text: string, file: string): unknown {
  try {
    return JSON.parse(stripJsonc(text));
  } catch (e) {
    throw new SbxError("config", `${file} is not valid JSON (with comments): ${(e as Error).message}`, { hint: "Fix the file, or pass --dockerfile or --image to use another image." });
  }
}
