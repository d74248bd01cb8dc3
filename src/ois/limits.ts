// Shape limits on untrusted values that reach the engine: request parameters (gateway callers and on-chain
// requesters alike) and API answers. Iterative walks, so a hostile nesting depth cannot overflow the stack.

/** Deeper parameters are refused: no real API takes them, and serializing them would overflow the stack. */
export const MAX_PARAMETER_DEPTH = 32;
/** Deeper API answers are refused before post-processing and encoding walk them. */
export const MAX_RESPONSE_DEPTH = 256;

/** True when a container holds containers more than `max` levels deep. */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

const LONE_SURROGATE = /\p{Surrogate}/u;

/** True when a string (value or key) anywhere in value is not valid Unicode (a lone UTF-16 surrogate). */
export function hasInvalidText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') {
      if (LONE_SURROGATE.test(node)) return true;
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      if (LONE_SURROGATE.test(key)) return true;
      stack.push(child);
    }
  }
  return false;
}

/** Why request parameters cannot be used, or undefined. The message names the rule, never the content. */
export function parameterProblem(parameters: Record<string, unknown>): string | undefined {
  if (nestedDeeperThan(parameters, MAX_PARAMETER_DEPTH)) {
    return `Invalid parameters: nested deeper than ${MAX_PARAMETER_DEPTH} levels`;
  }
  if (hasInvalidText(parameters)) return 'Invalid parameters: a name or value is not valid Unicode text';
  return undefined;
}

/** A request parameter that cannot be sent (e.g. a path parameter "..", which would change the API path). */
export class InvalidParameterError extends Error {}
