// A share group member on Kafka's own KafkaShareConsumer, for tests/share and the compat suite
// (compat_tests/share_members.py runs it): it reads a topic as a member of a share group and
// acknowledges each record explicitly, as its value says.
//
//   java ShareClient <bootstrap> <topic> <group> <idle-exit-ms> [hold|once|accept=N]
//
// A record whose value starts with "reject" is rejected, "release" released, any other accepted;
// with "hold" nothing is acknowledged (the records stay acquired until the process dies), with
// "once" it leaves after the first poll that returned records, with "accept=N" it accepts the
// first N records, releases the others it got and leaves once it accepted N. Each
// record is printed as "record <partition> <offset> <delivery count> <value>" when it arrives;
// the program exits after <idle-exit-ms> without a record (acknowledgements committed first; it
// waits at least -Dfirst.record.wait.ms, default 15 s, for the first one). After each commit it
// prints "acked <partition> <offset>" for each record it accepted whose partition's commit
// succeeded, and "ackfailed <partition> <offset> <error>" for the others.

import java.time.Duration;
import java.util.ArrayList;
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
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareClient {
    static final long FIRST_RECORD_WAIT_MS = Long.getLong("first.record.wait.ms", 15000);

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        long idleExitMs = Long.parseLong(args[3]);
        boolean hold = args.length > 4 && args[4].equals("hold");
        boolean once = args.length > 4 && args[4].equals("once");
        int acceptAtMost = args.length > 4 && args[4].startsWith("accept=")
            ? Integer.parseInt(args[4].substring(7)) : Integer.MAX_VALUE;
        int accepted = 0;
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            System.out.println("subscribed");
            System.out.flush();
            long lastRecord = System.currentTimeMillis();
            boolean any = false;
            // Joining and the first fetch may take long on a loaded machine: the first record
            // is waited for FIRST_RECORD_WAIT_MS at least.
            while (hold || System.currentTimeMillis() - lastRecord
                    < (any ? idleExitMs : Math.max(idleExitMs, FIRST_RECORD_WAIT_MS))) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                List<ConsumerRecord<String, String>> acceptedNow = new ArrayList<>();
                for (ConsumerRecord<String, String> record : records) {
                    lastRecord = System.currentTimeMillis();
                    any = true;
                    System.out.println("record " + record.partition() + " " + record.offset() + " "
                        + record.deliveryCount().orElse((short) -1) + " " + record.value());
                    if (hold) {
                        continue;
                    }
                    String value = record.value();
                    AcknowledgeType type = value.startsWith("reject") ? AcknowledgeType.REJECT
                        : value.startsWith("release") || accepted >= acceptAtMost
                        ? AcknowledgeType.RELEASE
                        : AcknowledgeType.ACCEPT;
                    if (type == AcknowledgeType.ACCEPT) {
                        accepted++;
                        acceptedNow.add(record);
                    }
                    consumer.acknowledge(record, type);
                }
                System.out.flush();
                if (!records.isEmpty() && hold) {
                    // Explicit mode allows no poll before every record is acknowledged.
                    Thread.sleep(Long.MAX_VALUE);
                }
                if (!records.isEmpty()) {
                    printCommitted(consumer.commitSync(), acceptedNow);
                    if (once || accepted >= acceptAtMost) {
                        break;
                    }
                }
            }
        }
        System.out.println("closed");
    }

    static void printCommitted(Map<TopicIdPartition, Optional<KafkaException>> results,
                               List<ConsumerRecord<String, String>> accepted) {
        for (ConsumerRecord<String, String> record : accepted) {
            Optional<KafkaException> error = Optional.of(new KafkaException("no commit result"));
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : results.entrySet()) {
                if (e.getKey().topic().equals(record.topic())
                        && e.getKey().partition() == record.partition()) {
                    error = e.getValue();
                }
            }
            if (error.isEmpty()) {
                System.out.println("acked " + record.partition() + " " + record.offset());
            } else {
                System.out.println("ackfailed " + record.partition() + " " + record.offset() + " "
                    + error.get().getClass().getSimpleName());
            }
        }
        System.out.flush();
    }
}
