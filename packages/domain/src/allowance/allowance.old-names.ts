import { allowanceKeys } from './allowance.keys.js';
import { type AllowanceState } from './allowance.js';
import { type AllowancePeriod, allowancePeriod } from './allowance.period.js';

/**
 * The allowance's names from before issue 24 (item 5), when it was also called "quota" in code.
 * Kept only for code that moves on other branches at the same time (the gateway's admin routes,
 * limits and tests, and the bench): renaming there now would collide with those moves. Once they
 * have landed, rename the remaining uses and delete this file. New code uses the allowance names.
 */
/** @deprecated use allowancePeriod */
export const quotaPeriod = allowancePeriod;
/** @deprecated use AllowancePeriod */
export type QuotaPeriod = AllowancePeriod;
/** @deprecated use AllowanceState */
export type QuotaState = AllowanceState;
/** @deprecated use allowanceKeys */
export const quotaKeys = allowanceKeys;
