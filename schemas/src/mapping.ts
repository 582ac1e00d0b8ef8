import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * The CRM mapping document of an account (issue 5): which CRM, and declarative rules saying
 * which events update which CRM records and how, in the manner of reverse-ETL tools
 * (Hightouch, Census). Rules a JSON Schema cannot say well live in the mapping validator of the
 * shared library and are documented here:
 * - rule ids are unique; one rule does not act on a field twice with ops that conflict
 *   (only `increment`, `max`, `min` and `append` may repeat a field, and only with the same op);
 * - templates use only `{{eventName}}`, `{{email}}`, `{{domain}}`, `{{timestamp}}` (ISO 8601)
 *   and `{{properties.<key>}}` (a top-level property key, taken literally);
 * - `credentialsRef` names a credential, it never is one;
 * - `in` conditions take an array value, `gt`/`lt` a number, every op but `exists` a value.
 *
 * Compile with ajv's `discriminator: true` option: actions are a oneOf discriminated by `op`,
 * which gives errors about the one action shape meant instead of every shape at once.
 */
export const MAX_MAPPING_RULES = 100;
export const MAX_RULE_ACTIONS = 50;
export const MAX_RULE_CONDITIONS = 20;

const StringEnum = <const T extends readonly string[]>(values: T, description?: string) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

const closed = <T extends Record<string, TSchema>>(properties: T, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

export const CRM_TYPES = ['hubspot', 'salesforce', 'webhook'] as const;
export const CRM_OBJECTS = ['contact', 'company'] as const;
export const CONDITION_OPS = ['eq', 'neq', 'exists', 'gt', 'lt', 'in'] as const;
export const EVENT_SOURCE_FIELDS = ['eventName', 'email', 'domain', 'timestamp', 'eventId'] as const;

// Letters first: a field name never is `__proto__`, so planned operations can be plain objects.
const FieldName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z][A-Za-z0-9_.-]*$',
  description: 'CRM field (property) name, e.g. last_seen_at or Last_Seen__c.',
});
const PropertyKey = Type.String({ minLength: 1, maxLength: 255, description: 'A top-level key of the event properties, taken literally.' });
export const Template = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: 'Text with {{eventName}}, {{email}}, {{domain}}, {{timestamp}} or {{properties.<key>}}.',
});

export const MappingSource = Type.Union(
  [
    closed({ event: StringEnum(EVENT_SOURCE_FIELDS, 'A field of the event; timestamp is epoch milliseconds.') }),
    closed({ property: PropertyKey }),
    closed({ constant: Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean(), Type.Null()]) }),
    closed({ template: Template }),
  ],
  { description: 'Where a value comes from: an event field, a property, a constant or a template.' },
);
export type MappingSource = Static<typeof MappingSource>;

const actionBranches = [
  closed({ op: Type.Literal('set'), field: FieldName, from: MappingSource }, 'Set the field on every matching event.'),
  closed({ op: Type.Literal('setOnce'), field: FieldName, from: MappingSource }, 'Set the field only while it is empty.'),
  closed({ op: Type.Literal('increment'), field: FieldName, by: Type.Optional(Type.Number({ description: 'Default 1.' })) }, 'Add to a number.'),
  closed({ op: Type.Literal('max'), field: FieldName, from: MappingSource }, 'Keep the greater number or timestamp, e.g. last_seen_at.'),
  closed({ op: Type.Literal('min'), field: FieldName, from: MappingSource }, 'Keep the smaller number or timestamp, e.g. first_seen_at.'),
  closed({ op: Type.Literal('append'), field: FieldName, from: MappingSource }, 'Add the value to a list.'),
] as const;
// `type: 'object'` is needed: ajv's discriminator lets anything that is not an object pass.
export const MappingAction = Type.Unsafe<MappingAction>({ type: 'object', oneOf: [...actionBranches], discriminator: { propertyName: 'op' } });
// Static distributes over the union of branch schemas.
export type MappingAction = Static<(typeof actionBranches)[number]>;
export type MappingActionOp = MappingAction['op'];

export const MappingCondition = closed(
  {
    property: PropertyKey,
    op: StringEnum(CONDITION_OPS),
    value: Type.Optional(Type.Unknown()),
  },
  'A condition on one event property; all conditions of a rule must hold.',
);
export type MappingCondition = Static<typeof MappingCondition>;

const EventName = Type.String({ minLength: 1, maxLength: 255 });

export const MappingRule = closed({
  id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$', description: 'Unique slug; part of the idempotency key.' }),
  when: closed({
    eventName: Type.Union([EventName, Type.Array(EventName, { minItems: 1, maxItems: 50 })]),
    where: Type.Optional(Type.Array(MappingCondition, { maxItems: MAX_RULE_CONDITIONS })),
  }),
  object: StringEnum(CRM_OBJECTS, 'contact records are keyed by email, company records by domain.'),
  actions: Type.Array(MappingAction, { minItems: 1, maxItems: MAX_RULE_ACTIONS }),
  activity: Type.Optional(closed({ type: Type.String({ minLength: 1, maxLength: 100 }), title: Template }, 'Also create a timeline record.')),
});
export type MappingRule = Static<typeof MappingRule>;

export const CrmMapping = Type.Object(
  {
    version: Type.Literal(1),
    crm: closed({
      type: StringEnum(CRM_TYPES),
      credentialsRef: Type.String({ minLength: 1, maxLength: 256, description: 'The name of a stored credential, never the secret itself.' }),
    }),
    rules: Type.Array(MappingRule, { minItems: 1, maxItems: MAX_MAPPING_RULES }),
    links: Type.Optional(
      closed(
        {
          contactCompany: Type.Optional(
            Type.Boolean({
              description:
                "Associate each contact with the company of its event's domain (HubSpot association, Salesforce Contact.AccountId). Default true; it applies only when the mapping has both contact and company rules.",
            }),
          ),
        },
        'Links between the records the mapping writes.',
      ),
    ),
  },
  { $id: 'CrmMapping', additionalProperties: false, description: 'How events of an account update its CRM.' },
);
export type CrmMapping = Static<typeof CrmMapping>;
