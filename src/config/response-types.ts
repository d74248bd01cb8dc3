// The `_type` grammar of reserved parameters, one definition for the config rules (a `_type`, `_path` or `_times`
// fixed by the endpoint that can never encode is refused at validation) and the OIS engine that casts and encodes
// by it (src/ois/reserved.ts).

const SOLIDITY_BASE_TYPES = ['uint256', 'int256', 'bool', 'bytes32', 'address', 'bytes', 'string'] as const;
const ARTIFICIAL_TYPES = ['string32', 'timestamp'] as const;
export const BASE_RESPONSE_TYPES: readonly string[] = [...SOLIDITY_BASE_TYPES, ...ARTIFICIAL_TYPES];

type ArrayType = { baseType: string; dimensions: number };

export function parseArrayType(type: string): ArrayType | null {
  const match = /^([^[]+)((?:\[\d*\])+)$/.exec(type);
  if (!match || !BASE_RESPONSE_TYPES.includes(match[1]!)) return null;
  const sizes = [...match[2]!.matchAll(/\[(\d*)\]/g)].map((m) => m[1]!);
  if (sizes.some((size) => size !== '' && Number.parseInt(size, 10) === 0)) return null;
  return { baseType: match[1]!, dimensions: sizes.length };
}

export function isNumericType(type: string): boolean {
  return type === 'int256' || type === 'uint256';
}

export function isValidType(type: string): boolean {
  return BASE_RESPONSE_TYPES.includes(type) || parseArrayType(type) !== null;
}

/**
 * Splits on `delimiter` honouring backslash escapes: `\<delimiter>` becomes the delimiter itself, any other
 * escaped pair is kept verbatim (for a later split on another delimiter), a trailing backslash is a plain
 * character — as the reference's regular-expression split does.
 */
export function escapeAwareSplit(value: string, delimiter: string): string[] {
  const tokens: string[] = [];
  let current = '';
  for (let i = 0; i < value.length; i++) {
    const char = value[i]!;
    if (char === '\\') {
      const next = value[i + 1];
      if (next === undefined) {
        current += char;
      } else {
        current += next === delimiter ? next : char + next;
        i++;
      }
    } else if (char === delimiter) {
      tokens.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  tokens.push(current);
  return tokens;
}

/**
 * Why the endpoint's reserved parameters fail every request (the OIS engine's own rules, src/ois/reserved.ts, applied
 * before any request), with the reserved parameter to point at; undefined when some request can succeed. It takes a
 * non-empty `fixed` `_type`; a non-empty `fixed` `_path` or `_times` is checked value by value, a `default` one only
 * where no value a requester may give instead can succeed (one type: any non-empty value fails as the default does,
 * and an empty one gives way to the default).
 */
export function fixedReservedProblem(
  reserved: readonly { name: string; fixed?: string | undefined; default?: string | undefined }[],
): { name: '_type' | '_path' | '_times'; message: string } | undefined {
  const find = (name: string) => reserved.find((p) => p.name === name);
  const type = find('_type')?.fixed || undefined;
  if (type === undefined) return undefined;
  const types = escapeAwareSplit(type, ',');
  for (const single of types) {
    if (!isValidType(single) || parseArrayType(single)?.baseType === 'timestamp') {
      return {
        name: '_type',
        message: `_type "${single}" can never be encoded: the types are ${BASE_RESPONSE_TYPES.join(', ')} and arrays of them (not of timestamp), comma-separated for several values`,
      };
    }
  }
  const rules = {
    _times: {
      fails: (base: string) => !isNumericType(base),
      message: (single: string) =>
        `_times can only be used with numeric types (int256, uint256), but _type is "${single}": every request would fail`,
    },
    _path: {
      fails: (base: string) => base === 'timestamp',
      message: () =>
        '_path must be empty when _type is timestamp (its value is the time of the call): every request would fail',
    },
  };
  for (const name of ['_path', '_times'] as const) {
    const parameter = find(name);
    const fixed = parameter?.fixed || undefined;
    const values =
      fixed !== undefined
        ? escapeAwareSplit(fixed, ',')
        : types.length === 1 && parameter?.default
          ? [parameter.default]
          : [];
    if (fixed !== undefined && values.length !== types.length)
      return {
        name,
        message: `${name} is fixed to ${values.length} value(s) for the ${types.length} of _type: every request would fail`,
      };
    for (const [i, single] of types.entries()) {
      if (values[i] && rules[name].fails(parseArrayType(single)?.baseType ?? single))
        return { name, message: rules[name].message(single) };
    }
  }
  return undefined;
}
