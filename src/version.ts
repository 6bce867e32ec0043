// The version sbx reports; kept in step with package.json by a unit test.
export const VERSION = "0.1.0";
