import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/**
 * Kafka's share-group SimpleAssignor on cases read from stdin, its results on stdout: what
 * tests/groups/test_share_assignor.py compares wireserver's share_assignor with.
 *
 * <p>A case:
 * <pre>
 * case H|X                  (homogeneous or heterogeneous subscriptions)
 * topic ID PARTITIONS       (one line a topic; ID is Kafka's base64 Uuid)
 * member MEMBER SUBS PREV   (one line a member, in GroupSpec.memberIds() order)
 * end
 * </pre>
 * SUBS is ID,ID,... (or -), put into a HashSet in that order; PREV is ID=P,P;ID=P,... (or -),
 * the previous assignment, a HashMap of HashSets filled in that order. wireserver's side fills
 * the same collections in the same order, since the assignor's choices follow their iteration
 * order; the members keep theirs (a LinkedHashMap).
 *
 * <p>The answer: "member MEMBER ID=P,P;ID=..." (topics and partitions sorted, - for none) a
 * member, in the same order, then "end"; or "error MESSAGE" then "end".
 */
public class SimpleAssignorCases {

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        SimpleAssignor assignor = new SimpleAssignor();
        SubscriptionType type = null;
        Map<Uuid, Integer> topics = new HashMap<>();
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new LinkedHashMap<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            switch (words[0]) {
                case "case":
                    type = words[1].equals("H") ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
                    topics = new HashMap<>();
                    members = new LinkedHashMap<>();
                    break;
                case "topic":
                    topics.put(Uuid.fromString(words[1]), Integer.parseInt(words[2]));
                    break;
                case "member":
                    members.put(words[1], new MemberSubscriptionAndAssignmentImpl(
                        Optional.empty(), Optional.empty(), subscription(words[2]), new Assignment(previous(words[3]))));
                    break;
                case "end":
                    answer(out, assignor, type, topics, members);
                    break;
                default:
                    if (!line.isBlank()) throw new IllegalArgumentException("what is " + line);
            }
        }
        out.flush();
    }

    private static Set<Uuid> subscription(String word) {
        Set<Uuid> ids = new HashSet<>();
        if (!word.equals("-"))
            for (String id : word.split(",")) ids.add(Uuid.fromString(id));
        return ids;
    }

    private static Map<Uuid, Set<Integer>> previous(String word) {
        Map<Uuid, Set<Integer>> partitions = new HashMap<>();
        if (word.equals("-")) return partitions;
        for (String topic : word.split(";")) {
            String[] idAndPartitions = topic.split("=", -1);
            Set<Integer> numbers = new HashSet<>();
            if (!idAndPartitions[1].isEmpty())
                for (String p : idAndPartitions[1].split(",")) numbers.add(Integer.parseInt(p));
            partitions.put(Uuid.fromString(idAndPartitions[0]), numbers);
        }
        return partitions;
    }

    private static void answer(
        PrintStream out,
        SimpleAssignor assignor,
        SubscriptionType type,
        Map<Uuid, Integer> topics,
        Map<String, MemberSubscriptionAndAssignmentImpl> members
    ) {
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return topics.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        try {
            GroupAssignment result = assignor.assign(new GroupSpecImpl(members, type, Map.of()), describer);
            for (String memberId : members.keySet()) {
                MemberAssignment assignment = result.members().get(memberId);
                Map<Uuid, Set<Integer>> partitions = assignment == null ? Map.of() : assignment.partitions();
                out.println("member " + memberId + " " + format(partitions));
            }
        } catch (RuntimeException e) {
            out.println("error " + e);
        }
        out.println("end");
    }

    private static String format(Map<Uuid, Set<Integer>> partitions) {
        if (partitions.isEmpty()) return "-";
        Map<String, Set<Integer>> sorted = new TreeMap<>();
        partitions.forEach((id, numbers) -> sorted.put(id.toString(), new TreeSet<>(numbers)));
        List<String> topics = new ArrayList<>();
        sorted.forEach((id, numbers) -> {
            List<String> ps = new ArrayList<>();
            numbers.forEach(p -> ps.add(Integer.toString(p)));
            topics.add(id + "=" + String.join(",", ps));
        });
        return String.join(";", topics);
    }
}
