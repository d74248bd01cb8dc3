// The one error type of a failed Kubernetes API call, whoever made it (the operator's runtime, the CLI, the
// coordinator and worker pods): every call goes through the RestClient, which throws ApiError, also when the
// credentials come from @kubernetes/client-node's KubeConfig (kubeconfig.ts's fallback for credential plugins).
// The predicates name the statuses callers act on, as apimachinery's errors.IsNotFound and its siblings do.

export class ApiError extends Error {
  constructor(
    message: string,
    /** HTTP status; 0 for a connection-level failure. */
    readonly status: number,
    readonly reason?: string,
    readonly retryAfterMs?: number,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || (this.status >= 500 && this.status !== 501);
  }
}

/** The HTTP status of a failed API call, or undefined for any other error. */
export function apiStatusOf(error: unknown): number | undefined {
  return error instanceof ApiError ? error.status : undefined;
}

export const isNotFound = (error: unknown): boolean => apiStatusOf(error) === 404;
export const isConflict = (error: unknown): boolean => apiStatusOf(error) === 409;
export const isGone = (error: unknown): boolean => apiStatusOf(error) === 410;
export const isInvalid = (error: unknown): boolean => apiStatusOf(error) === 422;
