import type { MultipartFields } from '@fastify/multipart';
import { ProblemError } from '../http/problem.js';
import { type CsvDelimiter, delimiterFromField } from './csv-delimiter.js';
import { timezoneFromField } from './csv-timestamp.js';

export interface CsvFormOptions {
  delimiter?: CsvDelimiter;
  timezone?: string;
}

/**
 * The upload's optional form fields, `delimiter` and `timezone`. Only the fields sent before
 * the file part are known when the file starts streaming (the file is read as it arrives, never
 * buffered), so that is where they must be; `curl -F` sends them in the order given. Other
 * fields are ignored, as before. A field given twice, or with a value it cannot take, is a 400
 * naming it, before anything is read.
 */
export function csvFormOptions(fields: MultipartFields): CsvFormOptions {
  const value = (name: string): string | undefined => {
    const field = fields[name];
    if (field === undefined) return undefined;
    if (Array.isArray(field) || field.type !== 'field' || typeof field.value !== 'string') {
      throw new ProblemError('validation', `The form field ${name} must be sent once, as text.`, {
        errors: [{ field: name, code: 'invalid_value', message: 'must be sent once, as text' }],
      });
    }
    return field.value;
  };
  const delimiter = value('delimiter');
  const timezone = value('timezone');
  return {
    ...(delimiter !== undefined && delimiter !== '' ? { delimiter: delimiterFromField(delimiter) } : {}),
    ...(timezone !== undefined && timezone.trim() !== '' ? { timezone: timezoneFromField(timezone) } : {}),
  };
}
