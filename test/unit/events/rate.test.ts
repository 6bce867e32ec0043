// Notifications per sandbox are budgeted: a flood is a few notices and one line saying more were held back.
import { expect, test } from "bun:test";
import { sandboxRate } from "../../../src/events/rate";

test("five per sandbox per minute, then one held-back, then drops; the next window starts again; sandboxes apart", () => {
  const r = sandboxRate(5, 60_000);
  const got = Array.from({ length: 8 }, (_, i) => r.take(1, 1000 + i));
  expect(got).toEqual(["send", "send", "send", "send", "send", "held-back", "drop", "drop"]);
  expect(r.take(2, 1010)).toBe("send");
  expect(r.take(1, 61_000)).toBe("send");
});
