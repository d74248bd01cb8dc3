// Finding the bounds of a string in JSON text without parsing it: the duplicate-key scan and the interpolation of
// `${NAME}` into the text both jump over strings with indexOf.
const BACKSLASH = 0x5c;

/** Whether the character at `at` is escaped: preceded by an odd run of backslashes. */
export function isEscaped(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/** Index of the quote closing the string that goes on at `from`, or -1 when the text ends first. */
export function closingQuote(text: string, from: number): number {
  let quote = text.indexOf('"', from);
  while (quote !== -1 && isEscaped(text, quote)) quote = text.indexOf('"', quote + 1);
  return quote;
}

/** Index of the quote opening the string that holds `at` (the last quote before it that is not escaped), or -1. */
export function openingQuote(text: string, at: number): number {
  let quote = text.lastIndexOf('"', at);
  while (quote > 0 && isEscaped(text, quote)) quote = text.lastIndexOf('"', quote - 1);
  return quote;
}
