import { type Static, Type } from '@sinclair/typebox';

/**
 * Dashboard owners as the admin API (/admin/v1/accounts/{accountId}/owners) takes and shows
 * them. The password hash never leaves the control plane.
 */
export const OWNER_PASSWORD_MIN = 12;
export const OWNER_PASSWORD_MAX = 256;

const Email = Type.String({ minLength: 3, maxLength: 254, description: 'Sign-in email; stored trimmed and lower-cased' });

export const CreateOwnerBody = Type.Object(
  {
    email: Email,
    password: Type.Optional(
      Type.String({ minLength: OWNER_PASSWORD_MIN, maxLength: OWNER_PASSWORD_MAX, description: 'Omit to have one generated and returned once' }),
    ),
  },
  { additionalProperties: false },
);

export const OwnerView = Type.Object(
  { id: Type.String(), accountId: Type.String(), email: Type.String(), createdAt: Type.String() },
  { additionalProperties: false },
);

export const CreatedOwner = Type.Object(
  { owner: OwnerView, password: Type.Optional(Type.String({ description: 'The generated password; shown only in this response' })) },
  { additionalProperties: false },
);

export const OwnerList = Type.Object({ owners: Type.Array(OwnerView) }, { additionalProperties: false });

export const OwnerParams = Type.Object({ accountId: Type.String({ minLength: 1, maxLength: 100 }), email: Email });
export type OwnerParams = Static<typeof OwnerParams>;

export const ResetOwnerPasswordBody = Type.Object(
  {
    password: Type.Optional(
      Type.String({ minLength: OWNER_PASSWORD_MIN, maxLength: OWNER_PASSWORD_MAX, description: 'Omit to have one generated and returned once' }),
    ),
  },
  { additionalProperties: false },
);
export type ResetOwnerPasswordBody = Static<typeof ResetOwnerPasswordBody>;

export type CreateOwnerBody = Static<typeof CreateOwnerBody>;
export type OwnerView = Static<typeof OwnerView>;
