// Pure: a stream of text chunks cut into whole lines (build output shown through a line-based log).

/** Turns a stream of chunks into whole lines (for progress shown through a line-based logger). */
export function lineSplitter(emit: (line: string) => void): (chunk: string) => void {
  let buf = "";
  return (chunk) => {
    buf += chunk.replace(/\r\n/g, "\n");
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).replace(/\r/g, "");
      buf = buf.slice(i + 1);
      if (line.trim() !== "") emit(line);
    }
  };
}
