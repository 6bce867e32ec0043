// Type of the text templates (pf anchor, plist) that Bun imports as strings with `with { type: "text" }`.
declare module "*.tmpl" {
  const text: string;
  export default text;
}
