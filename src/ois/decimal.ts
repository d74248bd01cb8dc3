// Exact decimal numbers on BigInt: value = coefficient / 10^scale. Parsing accepts what the reference's
// bignumber.js accepts for API values (decimal with exponent, surrounding whitespace, a leading "+",
// 0x/0b/0o prefixes), so the same inputs succeed and fail; arithmetic never touches floating point.

export type Decimal = { readonly coefficient: bigint; readonly scale: number };

/** Guards BigInt sizes: exponents this large are nonsense for 256-bit values and would stall the process. */
const MAX_EXPONENT = 100_000;
/** bignumber.js rounds fractional digits of non-decimal bases to DECIMAL_PLACES (20), half away from zero. */
const BASE_CONVERSION_DECIMALS = 20;

const DECIMAL = /^(-?)(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;
const LEADING_PLUS_OR_SPACE = /^\s*\+(?=[\w.])|^\s+|\s+$/g;
const BASE_PREFIX = /^(-?)0([xbo])(?=\w[\w.]*$)/i;
const NON_FINITE = /^-?(Infinity|NaN)$/;

function pow10(exponent: number): bigint {
  return 10n ** BigInt(exponent);
}

function parseDecimal(text: string): Decimal | null {
  const match = DECIMAL.exec(text);
  if (!match) return null;
  const [, sign, integerDigits = '', fractionDigits = '', exponentText] = match;
  if (integerDigits === '' && fractionDigits === '') return null;
  // "5." is valid but "." and ".e1" are not; "-.5" is valid (bignumber.js's isNumeric).
  if (integerDigits === '' && text.includes('.') && fractionDigits === '') return null;
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  const digits = BigInt(`${integerDigits}${fractionDigits}` || '0');
  let scale = fractionDigits.length - exponent;
  if (!Number.isSafeInteger(scale) || Math.abs(scale) > MAX_EXPONENT) return null;
  let coefficient = digits;
  if (scale < 0) {
    coefficient *= pow10(-scale);
    scale = 0;
  }
  return { coefficient: sign === '-' ? -coefficient : coefficient, scale };
}

function digitValue(char: string): number {
  const code = char.toLowerCase().charCodeAt(0);
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 122) return code - 87;
  return 99;
}

function parseInBase(text: string, base: number): Decimal | null {
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  // bignumber.js retries once with the other letter case, so mixed-case letters are rejected.
  if (body !== body.toLowerCase() && body !== body.toUpperCase()) return null;
  const [integerPart = '', fractionPart = '', ...rest] = body.split('.');
  if (rest.length > 0 || (integerPart === '' && fractionPart === '')) return null;
  const bigBase = BigInt(base);
  let integer = 0n;
  for (const char of integerPart) {
    const digit = digitValue(char);
    if (digit >= base) return null;
    integer = integer * bigBase + BigInt(digit);
  }
  let numerator = 0n;
  let denominator = 1n;
  for (const char of fractionPart) {
    const digit = digitValue(char);
    if (digit >= base) return null;
    numerator = numerator * bigBase + BigInt(digit);
    denominator *= bigBase;
  }
  const scaleFactor = pow10(BASE_CONVERSION_DECIMALS);
  const scaledFraction = (numerator * scaleFactor * 2n + denominator) / (2n * denominator);
  const coefficient = integer * scaleFactor + scaledFraction;
  return normalize({ coefficient: negative ? -coefficient : coefficient, scale: BASE_CONVERSION_DECIMALS });
}

function normalize(value: Decimal): Decimal {
  let { coefficient, scale } = value;
  while (scale > 0 && coefficient % 10n === 0n) {
    coefficient /= 10n;
    scale--;
  }
  return { coefficient, scale };
}

/** Parses like `new BigNumber(String(value))`; null when bignumber.js would give NaN or ±Infinity. */
export function parseDecimalLike(text: string): Decimal | null {
  const direct = parseDecimal(text);
  if (direct) return direct;
  const stripped = text.replace(LEADING_PLUS_OR_SPACE, '');
  if (NON_FINITE.test(stripped)) return null;
  const prefixed = BASE_PREFIX.exec(stripped);
  if (prefixed) {
    const base = prefixed[2]!.toLowerCase() === 'x' ? 16 : prefixed[2]!.toLowerCase() === 'b' ? 2 : 8;
    return parseInBase(prefixed[1] + stripped.slice(prefixed[0].length), base);
  }
  return stripped === text ? null : parseDecimal(stripped);
}

export function multiply(a: Decimal, b: Decimal): Decimal {
  return { coefficient: a.coefficient * b.coefficient, scale: a.scale + b.scale };
}

/** Drops the fractional part (truncation toward zero), returning a decimal integer string. */
export function truncateToIntegerString(value: Decimal): string {
  return (value.coefficient / pow10(value.scale)).toString();
}

export function decimalToString(value: Decimal): string {
  const { coefficient, scale } = normalize(value);
  if (scale === 0) return coefficient.toString();
  const negative = coefficient < 0n;
  const digits = (negative ? -coefficient : coefficient).toString().padStart(scale + 1, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}
