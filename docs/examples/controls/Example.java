// Inject a Produce error into a wireserver test broker, list the active controls, undo it.
// Run: WIRESERVER_CONTROLS_URL=http://127.0.0.1:PORT/controls java Example.java
// (Java 11 or later; only the JDK's java.net.http.)

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Example {
    static final HttpClient HTTP = HttpClient.newHttpClient();

    /** Sends one request, prints "METHOD URL STATUS BODY" and returns the body. */
    static String send(String method, String url, String json) throws Exception {
        HttpRequest.BodyPublisher body = json == null
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(json);
        HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                .header("Content-Type", "application/json")
                .method(method, body)
                .build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        System.out.println(method + " " + url + " " + response.statusCode() + " " + response.body());
        return response.body();
    }

    public static void main(String[] args) throws Exception {
        String controls = System.getenv("WIRESERVER_CONTROLS_URL");
        if (controls == null) {
            System.err.println("set WIRESERVER_CONTROLS_URL to the broker's /controls URL");
            System.exit(2);
        }
        // The next 3 Produce requests are answered NOT_LEADER_OR_FOLLOWER instead of handled.
        String added = send("POST", controls,
                "{\"control\": \"error\", \"api\": \"Produce\", "
                        + "\"error\": \"NOT_LEADER_OR_FOLLOWER\", \"count\": 3}");
        Matcher id = Pattern.compile("\"id\"\\s*:\\s*(\\d+)").matcher(added);
        if (!id.find()) {
            System.err.println("no control id in the answer");
            System.exit(1);
        }
        send("GET", controls, null);
        send("DELETE", controls + "/" + id.group(1), null);
    }
}
