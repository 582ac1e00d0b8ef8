import { type DestinationStream, type Logger, type LoggerOptions as PinoOptions, pino } from 'pino';

export type { Logger };

/**
 * Paths that may carry secrets. Logs carry ids (requestId, accountId, eventId, jobId), never
 * credentials or event contents; redaction is the safety net for the first rule.
 */
const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'token',
  '*.token',
  // CRM credentials (issue 5): the secret fields of a CrmCredential, bare or inside a record.
  'accessToken',
  '*.accessToken',
  'secret',
  '*.secret',
  'credential.accessToken',
  'credential.secret',
  '*.credential.accessToken',
  '*.credential.secret',
  'previousSecret',
  '*.previousSecret',
  'credential.previousSecret',
  '*.credential.previousSecret',
  // OAuth credentials: refresh tokens, JWT bearer keys, the OAuth app's secret, PKCE verifiers.
  'refreshToken',
  '*.refreshToken',
  'credential.refreshToken',
  '*.credential.refreshToken',
  'privateKey',
  '*.privateKey',
  'clientSecret',
  '*.clientSecret',
  'codeVerifier',
  '*.codeVerifier',
  // A record from before encryption (issue 18) holds its secrets here until it is sealed.
  'plaintextSecrets',
  '*.plaintextSecrets',
  // ioredis puts the failed command on its errors; AUTH's arguments are the password.
  'err.command.args',
  '*.err.command.args',
  // Dashboard owners and sessions.
  'passwordHash',
  '*.passwordHash',
  'csrfToken',
  '*.csrfToken',
];

export interface LoggerOptions {
  service: string;
  level?: string;
  /** Tests pass a stream to capture output. */
  destination?: DestinationStream;
}

export function createLogger({ service, level = 'info', destination }: LoggerOptions): Logger {
  const options: PinoOptions = {
    level,
    base: { service },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}
