// Reads records that claim to be Kafka Connect JsonConverter output (`schemas.enable=true`:
// each key and value a `{"schema": ..., "payload": ...}` envelope) and runs Kafka's own
// JsonConverter.toConnectData on every key and value, as a sink connector's worker would.
// Each converted key and value is written back with fromConnectData and must give the same
// JSON (toConnectData alone is lenient: it reads a string in an int32 field as 0). Prints one
// JSON line per record: for the key and the value either
//   {"ok": true, "schema": <the Connect schema>}     (null schema: a null key/value)
// or {"ok": false, "error": "<what JsonConverter threw, or that the way back differs>", ...}
// (with "schema" and "reencoded" when it converted but came back different).
// The Connect schema is printed as JSON: type, optional, name, version, doc, parameters,
// default, and fields (STRUCT), keySchema/valueSchema (MAP), valueSchema (ARRAY).
//
// Input, one of:
//   --bootstrap HOST:PORT --topic T --expect N [--timeout-ms MS]
//       the records of T from the beginning (read_committed), until N were read (exit 3 if
//       fewer came within the timeout, default 60000 ms)
//   --stdin
//       JSON lines {"key": <envelope or null>, "value": <envelope or null>} on standard input
// Exit status: 0 when every key and value converted, 1 when one did not, 2 on bad usage.
//
// Compiled and run by the test bed (scripts/lib/connect-json-check/run) against the Kafka
// jars in the download cache (connect-json, connect-api, kafka-clients, Jackson).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

public final class ConnectJsonCheck {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ConnectJsonCheck() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--stdin")) {
                opts.put("stdin", "true");
            } else if (a.startsWith("--") && i + 1 < args.length) {
                opts.put(a.substring(2), args[++i]);
            } else {
                usage("unexpected argument '" + a + "'");
            }
        }
        JsonConverter keys = converter(true);
        JsonConverter values = converter(false);
        boolean allOk;
        if (opts.containsKey("stdin")) {
            allOk = fromStdin(keys, values);
        } else {
            String bootstrap = opts.get("bootstrap");
            String topic = opts.get("topic");
            String expect = opts.get("expect");
            if (bootstrap == null || topic == null || expect == null) {
                usage("--bootstrap, --topic and --expect are required (or --stdin)");
            }
            long timeout = Long.parseLong(opts.getOrDefault("timeout-ms", "60000"));
            allOk = fromTopic(keys, values, bootstrap, topic, Integer.parseInt(expect), timeout);
        }
        System.out.flush();
        System.exit(allOk ? 0 : 1);
    }

    private static void usage(String why) {
        System.err.println("connect-json-check: " + why);
        System.err.println("usage: --bootstrap HOST:PORT --topic T --expect N [--timeout-ms MS] | --stdin");
        System.exit(2);
    }

    private static JsonConverter converter(boolean isKey) {
        JsonConverter c = new JsonConverter();
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("schemas.enable", "true");
        c.configure(cfg, isKey);
        return c;
    }

    private static boolean fromStdin(JsonConverter keys, JsonConverter values) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        boolean allOk = true;
        String line;
        long n = 0;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode rec = MAPPER.readTree(line);
            ObjectNode out = NODES.objectNode();
            out.put("line", n++);
            allOk &= check(out, "key", keys, bytesOf(rec.get("key")));
            allOk &= check(out, "value", values, bytesOf(rec.get("value")));
            System.out.println(MAPPER.writeValueAsString(out));
        }
        return allOk;
    }

    private static byte[] bytesOf(JsonNode n) throws Exception {
        return n == null || n.isNull() ? null : MAPPER.writeValueAsBytes(n);
    }

    private static boolean fromTopic(JsonConverter keys, JsonConverter values, String bootstrap,
            String topic, int expect, long timeoutMs) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        boolean allOk = true;
        int seen = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            while (parts.isEmpty()) {
                List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(10));
                if (infos != null) {
                    for (PartitionInfo info : infos) {
                        parts.add(new TopicPartition(topic, info.partition()));
                    }
                }
                if (parts.isEmpty()) {
                    if (System.currentTimeMillis() > deadline) {
                        System.err.println("connect-json-check: topic " + topic + " does not exist");
                        System.exit(3);
                    }
                    Thread.sleep(200);
                }
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            while (seen < expect) {
                if (System.currentTimeMillis() > deadline) {
                    System.out.flush();
                    System.err.println("connect-json-check: " + seen + " of " + expect + " records of "
                            + topic + " within " + timeoutMs + " ms");
                    System.exit(3);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    ObjectNode out = NODES.objectNode();
                    out.put("partition", r.partition());
                    out.put("offset", r.offset());
                    allOk &= check(out, "key", keys, r.key(), topic);
                    allOk &= check(out, "value", values, r.value(), topic);
                    System.out.println(MAPPER.writeValueAsString(out));
                    seen++;
                }
            }
        }
        return allOk;
    }

    private static boolean check(ObjectNode out, String what, JsonConverter c, byte[] bytes) {
        return check(out, what, c, bytes, "stdin");
    }

    /**
     * Converts `bytes` with `c` and back (fromConnectData), puts the outcome under `what` in
     * `out`; true when it converted and re-encoded to the same JSON. The way back catches what
     * toConnectData lets through: it reads a number field holding a string as 0, for one.
     */
    private static boolean check(ObjectNode out, String what, JsonConverter c, byte[] bytes, String topic) {
        ObjectNode res = out.putObject(what);
        res.put("ok", false); // first in the output; set below
        SchemaAndValue sv;
        try {
            sv = c.toConnectData(topic, bytes);
        } catch (RuntimeException e) {
            res.put("ok", false);
            res.put("error", describe(e));
            return false;
        }
        res.set("schema", sv.schema() == null ? NODES.nullNode() : schema(sv.schema()));
        if (bytes == null) {
            res.put("ok", true);
            return true;
        }
        try {
            JsonNode in = MAPPER.readTree(bytes);
            JsonNode back = MAPPER.readTree(c.fromConnectData(topic, sv.schema(), sv.value()));
            if (!in.equals(back)) {
                res.put("ok", false);
                res.put("error", "JsonConverter reads it, but writes it back differently");
                res.set("reencoded", back);
                return false;
            }
        } catch (Exception e) {
            res.put("ok", false);
            res.put("error", "re-encoding failed: " + describe(e));
            return false;
        }
        res.put("ok", true);
        return true;
    }

    private static String describe(Throwable e) {
        StringBuilder msg = new StringBuilder(e.getClass().getName() + ": " + e.getMessage());
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            msg.append("; caused by ").append(t.getClass().getName()).append(": ").append(t.getMessage());
        }
        return msg.toString();
    }

    /** The Connect schema as JSON (only the attributes that are set, plus type and optional). */
    static ObjectNode schema(Schema s) {
        ObjectNode n = NODES.objectNode();
        n.put("type", s.type().getName());
        n.put("optional", s.isOptional());
        if (s.name() != null) {
            n.put("name", s.name());
        }
        if (s.version() != null) {
            n.put("version", s.version());
        }
        if (s.doc() != null) {
            n.put("doc", s.doc());
        }
        if (s.parameters() != null && !s.parameters().isEmpty()) {
            ObjectNode params = n.putObject("parameters");
            s.parameters().forEach(params::put);
        }
        if (s.defaultValue() != null) {
            Object d = s.defaultValue();
            n.put("default", d instanceof byte[] ? Base64.getEncoder().encodeToString((byte[]) d) : String.valueOf(d));
        }
        switch (s.type()) {
            case STRUCT:
                ArrayNode fields = n.putArray("fields");
                for (Field f : s.fields()) {
                    ObjectNode fn = schema(f.schema());
                    ObjectNode named = NODES.objectNode();
                    named.put("field", f.name());
                    named.setAll(fn);
                    fields.add(named);
                }
                break;
            case MAP:
                n.set("keySchema", schema(s.keySchema()));
                n.set("valueSchema", schema(s.valueSchema()));
                break;
            case ARRAY:
                n.set("valueSchema", schema(s.valueSchema()));
                break;
            default:
                break;
        }
        return n;
    }
}
