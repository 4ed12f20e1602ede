// The calls of the Java client fluency_import_api (its FsbClient), made the
// way it makes them, with the libraries it uses: Apache HttpClient 4.5
// (a gzip-compressed text/plain entity for an import, a JSON entity for a
// call) and a default Jackson ObjectMapper reading every answer into the
// client's CallResponse shape, where an unknown top-level field fails the
// whole decode (FAIL_ON_UNKNOWN_PROPERTIES is on by default).
//
// Run by tests/clients/test_java_client.py with Java's single-file launcher:
//   java -cp <jars> ImportClient.java <base url> <username> <password>
// Prints one JSON object per step; the test reads them.

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.http.HttpEntity;
import org.apache.http.client.entity.GzipCompressingEntity;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpPost;
import org.apache.http.entity.ContentType;
import org.apache.http.entity.StringEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;

public class ImportClient {
    // The client's shapes: its request and its response envelope.
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class CallRequest {
        public String provider;
        public String replyQueue;
        public String function;
        public JsonNode kargs;
        @JsonInclude(JsonInclude.Include.NON_EMPTY)
        public List<Object> attachments;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class CallResponse {
        @JsonInclude(JsonInclude.Include.ALWAYS)
        public String verdict;
        public JsonNode response;
        @JsonInclude(JsonInclude.Include.NON_EMPTY)
        public List<Object> attachments;
        public String error;
        public String exception;
    }

    static final ObjectMapper MAPPER = new ObjectMapper();
    // UTF-8 whatever the locale (the test runs it under LC_ALL=C, where '?' replaces letters).
    static final PrintStream OUT = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    static final CloseableHttpClient HTTP = HttpClientBuilder.create().build();
    static final String HEADER = "FluencyToken";
    // Letters outside ASCII, as a Java string holds them (sent in ISO-8859-1 by TEXT_PLAIN).
    static final String LINE = "user=jos\u00e9 action=login city=M\u00fcnchen";

    // What the client returns for a status other than 200 or an answer it cannot read.
    static CallResponse exception(String message) {
        CallResponse res = new CallResponse();
        res.verdict = "EXCEPTION";
        res.exception = message;
        return res;
    }

    static CallResponse send(HttpPost post, String token) {
        if (token != null) {
            post.addHeader(HEADER, token);
        }
        try (CloseableHttpResponse response = HTTP.execute(post)) {
            int status = response.getStatusLine().getStatusCode();
            if (status != 200) {
                return exception("invalid http statusCode: " + status);
            }
            return MAPPER.readValue(response.getEntity().getContent(), CallResponse.class);
        } catch (Exception e) {
            return exception("post exception: " + e);
        }
    }

    // FsbClient.TextUpload: POST {base}/api/import/{vendor}, the text gzip-compressed
    // as text/plain (HttpClient's TEXT_PLAIN: charset ISO-8859-1).
    static CallResponse textUpload(String base, String token, String vendor, String text) {
        HttpPost post = new HttpPost(String.format("%s/api/import/%s", base, vendor));
        post.setEntity(new GzipCompressingEntity(new StringEntity(text, ContentType.TEXT_PLAIN)));
        return send(post, token);
    }

    // FsbClient.Call: POST {base}/{provider}/{function} with the whole request as JSON.
    static CallResponse call(String base, String token, String provider, String function, JsonNode kargs) throws Exception {
        CallRequest req = new CallRequest();
        req.provider = provider;
        req.function = function;
        req.kargs = kargs;
        HttpPost post = new HttpPost(String.format("%s/%s/%s", base, provider, function));
        StringEntity input = new StringEntity(MAPPER.writeValueAsString(req));
        input.setContentType("application/json");
        post.setEntity(input);
        return send(post, token);
    }

    static void report(String step, CallResponse res) throws Exception {
        ObjectNode out = MAPPER.createObjectNode();
        out.put("step", step);
        out.set("answer", MAPPER.valueToTree(res));
        OUT.println(MAPPER.writeValueAsString(out));
    }

    public static void main(String[] args) throws Exception {
        String base = args[0], user = args[1], password = args[2];
        ObjectNode login = MAPPER.createObjectNode();
        login.put("username", user);
        login.put("password", password);
        CallResponse session = call(base, null, "api/auth", "login", login);
        report("login", session);
        String token = session.response == null ? null : session.response.path("sessionToken").asText(null);

        report("import", textUpload(base, token, "javaclient", LINE + "\n" + LINE + "\n"));
        report("import without a token", textUpload(base, null, "javaclient", LINE + "\n"));

        ObjectNode options = MAPPER.createObjectNode();
        options.put("dateFacetField", "@timestamp");
        options.put("searchStr", "@source:javaclient");
        options.put("fetchLimit", 10);
        ObjectNode search = MAPPER.createObjectNode();
        search.put("partition", "default");
        search.put("dataType", "event");
        search.set("options", options);
        // Imported records are searchable within a commit interval: ask until both are there.
        CallResponse found = null;
        for (int attempt = 0; attempt < 40; attempt++) {
            found = call(base, token, "api/ds", "get_index_zoom_histogram_lv3", search);
            if (!"OK".equals(found.verdict) || found.response.path("hits").path("total").asInt() >= 2) {
                break;
            }
            Thread.sleep(250);
        }
        report("search", found);

        options.put("searchStr", "user:(");
        report("bad query", call(base, token, "api/ds", "get_index_zoom_histogram_lv3", search));
        HTTP.close();
    }
}
