// One line of `sbx doctor`: what was checked, how it stands, and what to do when it is not ok.
export type CheckStatus = "ok" | "warn" | "fail";

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do, when status is not ok. */
  fix?: string;
}
