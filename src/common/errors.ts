// The project's one vocabulary for errors: a thrown value as a message, and the HTTP status of a failed
// Kubernetes API call whichever client made it (the operator's RestClient throws ApiError with `status`;
// @kubernetes/client-node throws ApiException with `code`). No dependencies, so every layer may import it.

/** The message of anything thrown: an Error's message, otherwise its string form. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return String(error);
  } catch {
    return 'unknown error';
  }
}

/** The HTTP status a Kubernetes API error carries, or undefined for anything else. */
export function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, code } = error as { status?: unknown; code?: unknown };
  if (typeof status === 'number') return status;
  if (typeof code === 'number') return code;
  return undefined;
}

export const isNotFound = (error: unknown): boolean => httpStatusOf(error) === 404;
export const isConflict = (error: unknown): boolean => httpStatusOf(error) === 409;
export const isGone = (error: unknown): boolean => httpStatusOf(error) === 410;
