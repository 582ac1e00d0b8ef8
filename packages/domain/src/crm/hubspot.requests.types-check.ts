/**
 * Compile-time only: the HubSpot request bodies the builders send (hubspot.requests.ts) against
 * the input models of HubSpot's SDK, `@hubspot/api-client` (a devDependency; type imports are
 * erased, so nothing of the SDK runs or ships). `tsc` fails when a body drifts from the SDK.
 * The SDK's models are its client-side classes, not the wire JSON: `Wire` maps them back to what
 * goes on the wire (string enums to their values; the associations model's `_from` is sent as
 * `from`, per its attribute map).
 */
import type { BatchInputPublicDefaultAssociationMultiPost } from '@hubspot/api-client/lib/codegen/crm/associations/v4/index.js';
import type { BatchInputSimplePublicObjectBatchInputUpsert, BatchReadInputSimplePublicObjectId } from '@hubspot/api-client/lib/codegen/crm/objects/index.js';
import type { BatchInputSimplePublicObjectBatchInputForCreate } from '@hubspot/api-client/lib/codegen/crm/objects/notes/index.js';
import type { HubSpotAssociateBody, HubSpotBatchReadBody, HubSpotBatchUpsertBody, HubSpotNoteCreateBody } from './hubspot.requests.js';

type Wire<T> = T extends string
  ? `${T}`
  : T extends readonly (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T as K extends '_from' ? 'from' : K]: Wire<T[K]> }
      : T;

/** Compiles only when `Ours` can be sent where the SDK's model is expected. */
type Fits<Ours extends Theirs, Theirs> = [Ours, Theirs];

export type HubSpotBodiesFitTheSdk = [
  Fits<HubSpotBatchUpsertBody, Wire<BatchInputSimplePublicObjectBatchInputUpsert>>,
  // The SDK's model marks `propertiesWithHistory` required; the API reads a batch without it (we never ask for history).
  Fits<HubSpotBatchReadBody, Omit<Wire<BatchReadInputSimplePublicObjectId>, 'propertiesWithHistory'>>,
  Fits<HubSpotNoteCreateBody, Wire<BatchInputSimplePublicObjectBatchInputForCreate>>,
  Fits<HubSpotAssociateBody, Wire<BatchInputPublicDefaultAssociationMultiPost>>,
];
