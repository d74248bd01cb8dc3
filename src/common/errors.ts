// The project's one helper for a thrown value's message. No dependencies, so every layer may import it. A failed
// Kubernetes API call is src/kube's ApiError, tested with its isNotFound, isConflict, isGone and isInvalid.

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
