import type { FastifyInstance } from 'fastify';
import { hubspotError, salesforceError } from './fake-crm.state.js';

/**
 * What "test connection" and the property reads call, shaped as the real APIs answer (the
 * fields the normalisers read, and a few they ignore): HubSpot's account details and properties
 * API (`GET /crm/v3/properties/{objectType}`), Salesforce's org limits and sObject describe.
 * Differences from the real APIs: a fixed, small schema (the real ones hold hundreds of
 * properties), no per-property groups, and no scope check beyond the token.
 */
const hubspotProperty = (name: string, label: string, type: string, fieldType: string, extra: Record<string, unknown> = {}) => ({
  name,
  label,
  type,
  fieldType,
  groupName: 'contactinformation',
  description: '',
  hidden: false,
  calculated: false,
  hasUniqueValue: false,
  formField: true,
  modificationMetadata: { archivable: true, readOnlyDefinition: false, readOnlyValue: false },
  ...extra,
});
const readOnly = { modificationMetadata: { archivable: false, readOnlyDefinition: true, readOnlyValue: true } };

export const FAKE_HUBSPOT_PROPERTIES: Record<string, unknown[]> = {
  contacts: [
    hubspotProperty('email', 'Email', 'string', 'text', { hasUniqueValue: true }),
    hubspotProperty('firstname', 'First Name', 'string', 'text'),
    hubspotProperty('lifecyclestage', 'Lifecycle Stage', 'enumeration', 'radio', {
      options: [
        { label: 'Lead', value: 'lead', displayOrder: 0, hidden: false },
        { label: 'Customer', value: 'customer', displayOrder: 1, hidden: false },
      ],
    }),
    hubspotProperty('hs_object_id', 'Record ID', 'number', 'number', readOnly),
    hubspotProperty('plan', 'Plan', 'string', 'text'),
    hubspotProperty('signup_count', 'Signups', 'number', 'number'),
  ],
  companies: [
    hubspotProperty('domain', 'Company Domain Name', 'string', 'text', { hasUniqueValue: true }),
    hubspotProperty('name', 'Name', 'string', 'text'),
    hubspotProperty('hs_object_id', 'Record ID', 'number', 'number', readOnly),
  ],
};

const salesforceField = (name: string, label: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  label,
  type,
  length: type === 'string' ? 255 : 0,
  createable: true,
  updateable: true,
  calculated: false,
  externalId: false,
  nillable: true,
  picklistValues: [],
  ...extra,
});
const systemField = { createable: false, updateable: false, nillable: false };

export const FAKE_SALESFORCE_DESCRIBE: Record<string, unknown[]> = {
  Contact: [
    salesforceField('Id', 'Contact ID', 'id', systemField),
    salesforceField('LastName', 'Last Name', 'string', { nillable: false }),
    salesforceField('Email', 'Email', 'email'),
    salesforceField('Ingest_Email__c', 'Ingest Email', 'string', { externalId: true }),
    salesforceField('LeadSource', 'Lead Source', 'picklist', {
      picklistValues: [
        { value: 'Web', label: 'Web', active: true, defaultValue: false },
        { value: 'Fax', label: 'Fax', active: false, defaultValue: false },
      ],
    }),
  ],
  Account: [
    salesforceField('Id', 'Account ID', 'id', systemField),
    salesforceField('Name', 'Account Name', 'string', { nillable: false }),
    salesforceField('Ingest_Domain__c', 'Ingest Domain', 'string', { externalId: true }),
  ],
};

export function registerFakeSchemaEndpoints(app: FastifyInstance): void {
  app.get('/account-info/v3/details', async () => ({
    portalId: 62515,
    accountType: 'STANDARD',
    timeZone: 'Europe/Berlin',
    companyCurrency: 'EUR',
    additionalCurrencies: [],
    utcOffset: '+01:00',
    utcOffsetMilliseconds: 3_600_000,
    uiDomain: 'app.hubspot.com',
    dataHostingLocation: 'eu1',
  }));

  app.get<{ Params: { objectType: string } }>('/crm/v3/properties/:objectType', async (request, reply) => {
    const results = FAKE_HUBSPOT_PROPERTIES[request.params.objectType];
    if (!results) return reply.code(400).send(hubspotError('VALIDATION_ERROR', `Unable to infer object type from: ${request.params.objectType}`));
    return { results };
  });

  app.get('/services/data/:version/limits', async () => ({
    DailyApiRequests: { Max: 15_000, Remaining: 14_998 },
    DailyBulkApiBatches: { Max: 15_000, Remaining: 15_000 },
  }));

  app.get<{ Params: { version: string; sobject: string } }>('/services/data/:version/sobjects/:sobject/describe', async (request, reply) => {
    const fields = FAKE_SALESFORCE_DESCRIBE[request.params.sobject];
    if (!fields) return reply.code(404).send(salesforceError('NOT_FOUND', 'The requested resource does not exist'));
    return { name: request.params.sobject, label: request.params.sobject, createable: true, updateable: true, fields };
  });
}
