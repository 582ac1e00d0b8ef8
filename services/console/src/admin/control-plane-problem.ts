/**
 * Control plane errors, by code, as the admin API's and the dashboard's problems; anything else
 * stays as it is (a 500 for the error handler). Its own module: the admin routes, the owner and
 * CRM handlers and the dashboard's key routes all use it, and none of them imports another.
 */
import { AppError } from '@ingest/platform';
import { ProblemError } from '@ingest/http';

export function toProblem(err: unknown): unknown {
  if (!(err instanceof AppError)) return err;
  switch (err.code) {
    case 'account_not_found':
    case 'api_key_not_found':
    case 'owner_not_found':
    case 'admin_credential_not_found':
      return new ProblemError('notFound', `${err.message[0]?.toUpperCase() ?? ''}${err.message.slice(1)}.`, { cause: err });
    case 'invalid_name':
      return new ProblemError('validation', 'The request body is invalid.', {
        errors: [{ field: '/name', code: 'invalid_value', message: err.message }],
        cause: err,
      });
    case 'invalid_plan':
      return new ProblemError('validation', 'The request body is invalid.', {
        errors: [{ field: '/plan', code: 'invalid_value', message: err.message }],
        cause: err,
      });
    case 'invalid_scopes':
    case 'invalid_key_type':
    case 'invalid_origins':
    case 'invalid_reason':
    case 'invalid_admin_name':
    case 'invalid_admin_role': {
      const field = {
        invalid_scopes: '/scopes',
        invalid_key_type: '/type',
        invalid_origins: '/origins',
        invalid_reason: '/reason',
        invalid_admin_name: '/name',
        invalid_admin_role: '/role',
      }[err.code];
      return new ProblemError('validation', 'The request body is invalid.', { errors: [{ field, code: 'invalid_value', message: err.message }], cause: err });
    }
    case 'account_suspended':
      return new ProblemError('accountSuspended', 'This account is suspended: its dashboard is read-only until it is resumed.', {
        extensions: { code: 'account_suspended' },
        cause: err,
      });
    case 'api_key_limit':
    case 'admin_credential_limit':
      return new ProblemError('conflict', `${err.message[0]?.toUpperCase() ?? ''}${err.message.slice(1)}.`, { cause: err });
    case 'crm_credential_key_missing':
      // An operator's setting, not the caller's fault; no retry-after: it stays so until configured.
      return new ProblemError('unavailable', 'CRM credentials cannot be stored: the encryption key is not configured on this gateway.', { cause: err });
    default:
      if (err.retryable) {
        return new ProblemError('unavailable', 'The control plane is temporarily unavailable; retry shortly.', { headers: { 'retry-after': '1' }, cause: err });
      }
      return err;
  }
}
