/**
 * The page script of analytics-next.browser.test.ts: Segment's browser SDK from npm, as a site
 * bundles it, handed to the page's own code. esbuild bundles this file for the browser; Node
 * never imports it.
 */
import { AnalyticsBrowser } from '@segment/analytics-next';

(globalThis as unknown as { AnalyticsBrowser: typeof AnalyticsBrowser }).AnalyticsBrowser = AnalyticsBrowser;
