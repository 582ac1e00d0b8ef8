import { committedOffsets, createEndOffsetsReader, type KafkaClient } from '@ingest/platform';

export interface PipelineStage {
  groupId: string;
  topic: string;
}

/**
 * "Has everything written so far passed through these stages?" For each stage in order, take
 * the topic's end offsets now and wait until the group has committed up to them. Stages are
 * checked in pipeline order (jobs.chunks -> events.raw -> events.unique), so an event still
 * moving between two stages when the check starts is caught by the next stage's end offsets.
 */
export async function waitForPipeline(kafka: KafkaClient, stages: readonly PipelineStage[], options: { timeoutMs: number; pollMs?: number }): Promise<boolean> {
  const deadline = Date.now() + options.timeoutMs;
  const reader = createEndOffsetsReader(kafka);
  await reader.connect();
  try {
    for (const stage of stages) {
      const ends = await reader.endOffsets([stage.topic]);
      for (;;) {
        const committed = await committedOffsets(kafka, stage.groupId, stage.topic);
        const behind = ends.filter((end) => {
          const at = BigInt(committed.get(end.partition) ?? '-1');
          return end.high > end.low && (at < 0n ? end.low : at) < end.high;
        });
        if (behind.length === 0) break;
        if (Date.now() > deadline) return false;
        await new Promise((r) => setTimeout(r, options.pollMs ?? 250));
      }
    }
    return true;
  } finally {
    await reader.disconnect();
  }
}
