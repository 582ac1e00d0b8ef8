/**
 * The body of a TabSeparated insert: each line's UTF-8 bytes and a newline, written straight into
 * one buffer. `Buffer.from(lines.join('\n') + '\n')` builds the joined string first, then
 * flattens and encodes it: 570-774 ns a line against 181-294 here (12,000 lines of ~650
 * characters, an insert's worth, ASCII and Latin-1 alike; Node 24, this 2-core machine,
 * 2026-11-29), on the storage writer's thread for every row it stores.
 */
export function tabSeparatedBody(lines: readonly string[]): Buffer {
  let chars = 0;
  let longest = 0;
  for (const line of lines) {
    chars += line.length;
    if (line.length > longest) longest = line.length;
  }
  // Room for every line as one byte a character, and for the longest at three (a UTF-16 unit
  // is at most three UTF-8 bytes): ASCII never grows the buffer; other text may, by doubling.
  let body = Buffer.allocUnsafe(chars + lines.length + 2 * longest + 1);
  let at = 0;
  for (const line of lines) {
    if (at + line.length * 3 + 1 > body.length) {
      const larger = Buffer.allocUnsafe(Math.max(body.length * 2, at + line.length * 3 + 1));
      body.copy(larger, 0, 0, at);
      body = larger;
    }
    at += body.write(line, at, 'utf8');
    body[at++] = 0x0a;
  }
  return body.subarray(0, at);
}
