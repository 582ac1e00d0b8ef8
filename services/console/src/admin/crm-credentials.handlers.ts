import type { CrmCredentialBody, CrmCredentialView } from '@ingest/schemas';
import { type ControlPlane, type CrmCredential, credentialUrls, crmCredentialErrors, type OutboundPolicy, type StoredCrmCredential } from '@ingest/domain';
import { type Auditor, ProblemError } from '@ingest/http';
import type { FastifyRequest } from 'fastify';
import { mapErrors } from './crm-mapping.handlers.js';

/**
 * Storing and deleting a CRM credential, shared by the admin API and the owner's Connections
 * page: the outbound address policy on its URLs, the control plane's write (which validates the
 * credential and seals its secret for crm-sink), the log line and the audit record with views
 * only. `who` names the surface in the log (`admin`, `dashboard`).
 */
export interface CredentialWriteContext {
  controlPlane: ControlPlane;
  outbound: OutboundPolicy;
  auditor: Auditor;
  who: 'admin' | 'dashboard';
}

export async function storeCredential(
  ctx: CredentialWriteContext,
  request: FastifyRequest,
  accountId: string,
  name: string,
  body: unknown,
): Promise<CrmCredentialView> {
  refuseOutboundUrls(ctx.outbound, name, body);
  const previous = ctx.controlPlane.crmCredential(accountId, name);
  const stored = await mapErrors(() => ctx.controlPlane.putCrmCredential(accountId, name, body as CrmCredentialBody as CrmCredential));
  request.log.info({ accountId, credentialName: name, crmType: stored.credential.type }, `${ctx.who}: crm credential stored`);
  // Views only: the secret fields never reach the audit log (the writer drops them by name as well).
  await ctx.auditor.record(request, {
    action: 'crm_credential.put',
    accountId,
    target: name,
    before: previous ? toCredentialView(previous) : null,
    after: toCredentialView(stored),
  });
  return toCredentialView(stored);
}

/** 404 when unknown, 409 while the current mapping names it (the control plane refuses). */
export async function deleteCredential(ctx: CredentialWriteContext, request: FastifyRequest, accountId: string, name: string): Promise<void> {
  const previous = ctx.controlPlane.crmCredential(accountId, name);
  await mapErrors(() => ctx.controlPlane.deleteCrmCredential(accountId, name));
  request.log.info({ accountId, credentialName: name }, `${ctx.who}: crm credential deleted`);
  await ctx.auditor.record(request, {
    action: 'crm_credential.delete',
    accountId,
    target: name,
    before: previous ? toCredentialView(previous) : null,
    after: null,
  });
}

/**
 * The outbound address policy when a credential is stored: a URL the sink would refuse to
 * connect to (plain http, loopback, private, link-local, ...) is a 400 now rather than a dead
 * letter later. Listed with the credential's other errors, so one answer names them all. The
 * sink checks again on every connect, on the resolved address (DNS rebinding).
 */
export function refuseOutboundUrls(policy: OutboundPolicy, name: string, body: unknown): void {
  const refused = credentialUrls(body).flatMap(({ field, url }) => {
    const check = policy.checkUrl(url);
    return check.ok ? [] : [{ field, code: check.code, message: check.reason }];
  });
  if (refused.length === 0) return;
  const errors = [...crmCredentialErrors(name, body).filter((e) => !refused.some((r) => r.field === e.field)), ...refused];
  const first = refused[0] as { field: string; message: string };
  throw new ProblemError('validation', `The credential's ${first.field.slice(1)} is refused by the outbound address policy: ${first.message}.`, {
    errors: errors.map((e) => ({ ...e, field: e.field === '' ? '/' : e.field })),
  });
}

/** Non-secret fields by allow-list, so a secret field added later stays hidden by default. */
export function toCredentialView(stored: StoredCrmCredential): CrmCredentialView {
  const c = stored.credential;
  const view: CrmCredentialView = { name: stored.name, type: c.type, updatedAt: stored.updatedAt };
  if (c.type === 'hubspot' && c.baseUrl !== undefined) view.baseUrl = c.baseUrl;
  if (c.type === 'salesforce') {
    view.instanceUrl = c.instanceUrl;
    if (c.apiVersion !== undefined) view.apiVersion = c.apiVersion;
    if (c.contactExternalIdField !== undefined) view.contactExternalIdField = c.contactExternalIdField;
    if (c.accountExternalIdField !== undefined) view.accountExternalIdField = c.accountExternalIdField;
  }
  if (c.type === 'webhook') {
    view.url = c.url;
    if (c.signsWithPreviousSecret === true) view.signsWithPreviousSecret = true;
  }
  if (c.type !== 'webhook' && c.auth) {
    // Only the clear settings of `auth`; its tokens and keys are sealed and never shown.
    const { v: _v, connectionId: _c, ...shown } = c.auth as typeof c.auth & { connectionId?: string };
    view.auth = shown;
  }
  return view;
}
