// A word-count Kafka Streams application on the Streams group protocol (KIP-1071,
// group.protocol=streams) for compat_tests/scenarios_streams.py: splits each line of the input
// topic into words, counts each word in a state store ("counts", behind a repartition topic
// and a changelog topic the broker creates) and writes every new count to the output topic.
// Compiled at test time against the reference's jars and kafka-streams.
//
// Usage: java WordCountApp <bootstrap> <application.id> <input> <output> <state dir>
// One JVM runs several KafkaStreams instances (each its own process id and state
// directory), driven by lines on stdin:
//   start <name>   start an instance               -> "started <name>"
//   tasks          -> "tasks <name> <state> <active task ids, comma-separated>" per instance,
//                     then "end"
//   close <name>   close an instance (it leaves the group) -> "closed <name>"
//   quit           close them all and exit

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class WordCountApp {
    public static void main(String[] args) throws Exception {
        Map<String, KafkaStreams> instances = new TreeMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("start")) {
                KafkaStreams streams = new KafkaStreams(topology(args), props(args, cmd[1]));
                streams.start();
                instances.put(cmd[1], streams);
                say("started " + cmd[1]);
            } else if (cmd[0].equals("tasks")) {
                for (Map.Entry<String, KafkaStreams> e : instances.entrySet()) {
                    TreeSet<String> tasks = new TreeSet<>();
                    for (ThreadMetadata thread : e.getValue().metadataForLocalThreads()) {
                        for (TaskMetadata task : thread.activeTasks()) {
                            tasks.add(task.taskId().toString());
                        }
                    }
                    say("tasks " + e.getKey() + " " + e.getValue().state() + " "
                            + String.join(",", tasks));
                }
                say("end");
            } else if (cmd[0].equals("close")) {
                instances.remove(cmd[1]).close(Duration.ofSeconds(30));
                say("closed " + cmd[1]);
            } else if (cmd[0].equals("quit")) {
                break;
            }
        }
        for (KafkaStreams streams : instances.values()) {
            streams.close(Duration.ofSeconds(30));
        }
        say("bye");
    }

    private static Properties props(String[] args, String name) {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, new File(args[4], name).getPath());
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        return props;
    }

    private static org.apache.kafka.streams.Topology topology(String[] args) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2])
                .flatMapValues(v -> Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((k, word) -> !word.isEmpty())
                .groupBy((k, word) -> word)
                .count(Materialized.as("counts"))
                .toStream()
                .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
