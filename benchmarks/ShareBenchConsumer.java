// One share-group member on Kafka's own KafkaShareConsumer, for benchmarks/share.py: it reads a
// topic as a member of a share group, accepts every record explicitly and commits the
// acknowledgements of each poll with commitSync, timing each commitSync.
//
//   java ShareBenchConsumer <bootstrap> <topic> <group> <idle-exit-ms>
//
// It subscribes, prints "ready" and waits for a line on stdin, so that the harness can start
// every member's JVM first and then let them all poll at once. After each poll that returned
// records it prints "progress <records so far>"; it leaves when stdin says "stop" (the harness
// has seen every record) or after <idle-exit-ms> without a record (60 s before the first one).
// Before "closed" it prints what the harness measures (times in microseconds of the epoch, so
// that members' clocks compare):
//   summary <records> <first record us> <last record us> <seen twice> <redelivered> <ack errors>
//   offsets <first>-<last> ...   (the offsets it got, as runs)
//   commits <us> ...             (the duration of each commitSync)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareBenchConsumer {
    static final long FIRST_RECORD_WAIT_MS = 60000;
    static volatile boolean stopped = false;

    static long epochMicros() {
        return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        long idleExitMs = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        long records = 0, first = -1, last = -1, seenTwice = 0, redelivered = 0, ackErrors = 0;
        BitSet offsets = new BitSet();
        long[] commits = new long[1024];
        int commitCount = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            System.out.println("ready");
            System.out.flush();
            if (stdin.readLine() == null) {
                return;
            }
            Thread watcher = new Thread(() -> {
                try {
                    String line;
                    while ((line = stdin.readLine()) != null && !line.equals("stop")) {
                    }
                } catch (Exception e) {
                    // stdin closed: stop as well
                }
                stopped = true;
            });
            watcher.setDaemon(true);
            watcher.start();
            long lastRecordMs = System.currentTimeMillis();
            while (!stopped && System.currentTimeMillis() - lastRecordMs
                    < (records > 0 ? idleExitMs : FIRST_RECORD_WAIT_MS)) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                if (polled.isEmpty()) {
                    continue;
                }
                long now = epochMicros();
                if (first < 0) {
                    first = now;
                }
                last = now;
                lastRecordMs = System.currentTimeMillis();
                for (ConsumerRecord<byte[], byte[]> record : polled) {
                    int offset = (int) record.offset();
                    if (offsets.get(offset)) {
                        seenTwice++;
                    }
                    offsets.set(offset);
                    if (record.deliveryCount().orElse((short) 1) > 1) {
                        redelivered++;
                    }
                    records++;
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                }
                long started = System.nanoTime();
                Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
                long tookMicros = (System.nanoTime() - started) / 1000;
                for (Optional<KafkaException> error : result.values()) {
                    if (error.isPresent()) {
                        ackErrors++;
                    }
                }
                if (commitCount == commits.length) {
                    commits = Arrays.copyOf(commits, commitCount * 2);
                }
                commits[commitCount++] = tookMicros;
                System.out.println("progress " + records);
                System.out.flush();
            }
        }
        StringBuilder runs = new StringBuilder("offsets");
        for (int from = offsets.nextSetBit(0); from >= 0; ) {
            int to = offsets.nextClearBit(from);
            runs.append(' ').append(from).append('-').append(to - 1);
            from = offsets.nextSetBit(to);
        }
        StringBuilder took = new StringBuilder("commits");
        for (int i = 0; i < commitCount; i++) {
            took.append(' ').append(commits[i]);
        }
        System.out.println("summary " + records + " " + first + " " + last + " " + seenTwice + " "
            + redelivered + " " + ackErrors);
        System.out.println(runs);
        System.out.println(took);
        System.out.println("closed");
        System.out.flush();
    }
}
