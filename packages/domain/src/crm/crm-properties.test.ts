import { describe, expect, it } from 'vitest';
import { buildPropertiesRequest, normaliseHubSpotProperties, normaliseSalesforceDescribe, PROPERTY_LIST_BOUNDS } from './crm-properties.js';

describe('CRM object properties, normalised', () => {
  it('reads HubSpot properties: read-only, options, hidden ones dropped', () => {
    const list = normaliseHubSpotProperties('contact', {
      results: [
        { name: 'email', label: 'Email', type: 'string', modificationMetadata: { readOnlyValue: false } },
        { name: 'hs_object_id', label: 'Record ID', type: 'number', modificationMetadata: { readOnlyValue: true } },
        {
          name: 'lifecyclestage',
          label: 'Stage',
          type: 'enumeration',
          options: [
            { value: 'lead', label: 'Lead' },
            { value: 'old', label: 'Old', hidden: true },
          ],
        },
        { name: 'secret_internal', hidden: true },
      ],
    });
    expect(list).toEqual({
      v: 1,
      crm: 'hubspot',
      object: 'contact',
      properties: [
        { name: 'email', label: 'Email', type: 'string', readOnly: false },
        { name: 'hs_object_id', label: 'Record ID', type: 'number', readOnly: true },
        { name: 'lifecyclestage', label: 'Stage', type: 'enumeration', readOnly: false, options: [{ value: 'lead', label: 'Lead' }] },
      ],
    });
  });

  it('reads a Salesforce describe: not createable nor updateable is read-only, inactive picklist values dropped', () => {
    const list = normaliseSalesforceDescribe('company', {
      name: 'Account',
      fields: [
        { name: 'Name', label: 'Account Name', type: 'string', createable: true, updateable: true },
        { name: 'Id', label: 'Account ID', type: 'id', createable: false, updateable: false },
        {
          name: 'Rating',
          label: 'Rating',
          type: 'picklist',
          createable: true,
          updateable: true,
          picklistValues: [
            { value: 'Hot', label: 'Hot', active: true },
            { value: 'Cold', active: false },
          ],
        },
      ],
    });
    expect(list?.properties).toEqual([
      { name: 'Name', label: 'Account Name', type: 'string', readOnly: false },
      { name: 'Id', label: 'Account ID', type: 'id', readOnly: true },
      { name: 'Rating', label: 'Rating', type: 'picklist', readOnly: false, options: [{ value: 'Hot', label: 'Hot' }] },
    ]);
  });

  it('bounds what a CRM with an absurd schema returns, and says so', () => {
    const many = Array.from({ length: PROPERTY_LIST_BOUNDS.properties + 5 }, (_, i) => ({ name: `p${i}`, label: 'x'.repeat(1000), type: 'string' }));
    const list = normaliseHubSpotProperties('contact', { results: many });
    expect(list?.properties).toHaveLength(PROPERTY_LIST_BOUNDS.properties);
    expect(list?.properties[0]?.label).toHaveLength(PROPERTY_LIST_BOUNDS.textLength);
    expect(list?.truncated).toBe(true);
  });

  it('answers undefined for a body that is not the documented shape', () => {
    expect(normaliseHubSpotProperties('contact', 'garbage')).toBeUndefined();
    expect(normaliseSalesforceDescribe('contact', { fields: 'no' })).toBeUndefined();
  });

  it('names the documented endpoints', () => {
    expect(buildPropertiesRequest({ type: 'hubspot', accessToken: 't' }, 'company')?.path).toBe('/crm/v3/properties/companies?archived=false');
    expect(buildPropertiesRequest({ type: 'salesforce', accessToken: 't', instanceUrl: 'https://x', apiVersion: 'v59.0' }, 'contact')?.path).toBe(
      '/services/data/v59.0/sobjects/Contact/describe',
    );
    expect(buildPropertiesRequest({ type: 'webhook', url: 'https://x', secret: 's' }, 'contact')).toBeUndefined();
  });
});
