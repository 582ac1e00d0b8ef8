import { describe, expect, it } from 'vitest';
import { testLogger } from '@ingest/testkit';
import { aclBindings, applyAcls, controlTopicsRead, KAFKA_ROLES, parseAclPrincipals, retiredAclBindings, ROLE_GRANTS } from './acls.js';
import type { AclBinding, KafkaClient } from './driver.js';
import { TOPICS } from './topics.js';

describe('aclBindings', () => {
  it('grants ingest its writes and the accounts and API keys by topic name, never a write to control.*', () => {
    const acls = aclBindings('ingest', 'User:ingest', 'p.');
    expect(acls).toContainEqual({ resourceType: 'topic', resourceName: 'p.events.raw', patternType: 'literal', principal: 'User:ingest', operation: 'WRITE' });
    expect(acls.filter((a) => a.resourceType === 'topic' && a.operation === 'READ').map((a) => a.resourceName)).toEqual([
      'p.control.accounts',
      'p.control.apikeys',
    ]);
    expect(acls).toContainEqual({
      resourceType: 'group',
      resourceName: 'control-plane.',
      patternType: 'prefixed',
      principal: 'User:ingest',
      operation: 'READ',
    });
    expect(acls.filter((a) => a.operation === 'WRITE' && a.resourceName.startsWith('p.control.'))).toEqual([]);
  });

  it('grants no topic by prefix: a new control topic is readable by the roles that list it, no others', () => {
    for (const role of KAFKA_ROLES) {
      expect(aclBindings(role, `User:${role}`, 'p.').filter((a) => a.resourceType === 'topic' && a.patternType === 'prefixed')).toEqual([]);
    }
  });

  it('lets each role read only the control topics it uses; the console all of them', () => {
    expect(Object.fromEntries(KAFKA_ROLES.map((role) => [role, controlTopicsRead(role)]))).toEqual({
      ingest: ['controlAccounts', 'controlApiKeys'],
      console: ['controlAccounts', 'controlApiKeys', 'controlOwners', 'controlMappings', 'controlCrmCredentials', 'controlAdmins'],
      processor: ['controlAccounts'],
      'crm-sink': ['controlAccounts', 'controlMappings', 'controlCrmCredentials'],
    });
    const controlTopics = (Object.keys(TOPICS) as (keyof typeof TOPICS)[]).filter((key) => key.startsWith('control'));
    expect([...controlTopicsRead('console')].sort()).toEqual([...controlTopics].sort());
  });

  it('retires the control. prefix grants of earlier versions, for each principal it is given', async () => {
    const created: AclBinding[] = [];
    const deleted: AclBinding[] = [];
    const admin = {
      connect: async () => {},
      disconnect: async () => {},
      createAcls: async (b: readonly AclBinding[]) => void created.push(...b),
      deleteAcls: async (b: readonly AclBinding[]) => void deleted.push(...b),
    };
    const kafka = { admin: () => admin } as unknown as KafkaClient;
    const count = await applyAcls(kafka, {
      principals: parseAclPrincipals('ingest=User:gw,console=User:console,ingest=User:console'),
      topicPrefix: 'p.',
      logger: testLogger(),
    });
    expect(count).toBe(created.length);
    expect(deleted).toEqual(['User:gw', 'User:console'].flatMap((principal) => retiredAclBindings(principal, 'p.')));
    expect(deleted.map((d) => `${d.principal} ${d.operation} ${d.resourceName}*`)).toEqual([
      'User:gw READ p.control.*',
      'User:gw WRITE p.control.*',
      'User:console READ p.control.*',
      'User:console WRITE p.control.*',
    ]);
    // None of them is a grant of today's table.
    expect(created.filter((c) => c.patternType === 'prefixed' && c.resourceType === 'topic')).toEqual([]);
  });

  it('lets only the console write the control plane', () => {
    const writers = KAFKA_ROLES.filter((role) =>
      aclBindings(role, `User:${role}`, '').some((a) => a.operation === 'WRITE' && a.resourceName.startsWith('control.')),
    );
    expect(writers).toEqual(['console']);
  });

  it('lets only the console write the audit log, and only the processor (its copier) read it', () => {
    const grants = (op: 'READ' | 'WRITE') =>
      KAFKA_ROLES.filter((role) => aclBindings(role, `User:${role}`, '').some((a) => a.operation === op && a.resourceName === 'audit.log'));
    expect(grants('WRITE')).toEqual(['console']);
    expect(grants('READ')).toEqual(['processor']);
  });

  it('names only topics that exist', () => {
    const names = new Set(Object.values(TOPICS).map((t) => t.name));
    for (const role of KAFKA_ROLES) {
      for (const a of aclBindings(role, 'User:x', '')) {
        if (a.resourceType === 'topic' && a.patternType === 'literal') expect(names, `${role}: ${a.resourceName}`).toContain(a.resourceName);
      }
    }
    expect(ROLE_GRANTS['crm-sink'].read).not.toContain('controlApiKeys');
  });
});

describe('parseAclPrincipals', () => {
  it('reads role=principal pairs, a principal may hold several roles', () => {
    expect(parseAclPrincipals(' ingest=User:gw, console=User:gw ,,')).toEqual([
      { role: 'ingest', principal: 'User:gw' },
      { role: 'console', principal: 'User:gw' },
    ]);
    expect(parseAclPrincipals('')).toEqual([]);
  });

  it.each(['ingest', 'reader=User:x', 'ingest=ingest', 'ingest='])('refuses %j naming the variable', (value) => {
    expect(() => parseAclPrincipals(value)).toThrow(/^KAFKA_ACL_PRINCIPALS: /);
  });
});
