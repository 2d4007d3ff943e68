import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A deltalog consumer with nothing of deltalog but its schemas (docs/pipeline.md, "The record
 * contract"): a query's view, then the changes after it, integrated.
 *
 * <p>Usage: {@code ViewConsumer BOOTSTRAP PREFIX QUERY SCHEMAS_DIR}. Prints {@code snapshot R T}
 * once the view is read, then follows the change stream until a line arrives on stdin; then
 * reads on to the stream's end as it is at that moment and prints {@code position R T} and the
 * result, one {@code WEIGHT<TAB>VALUES} line per row (values as Avro's JSON-like text).
 *
 * <ol>
 *   <li>start = the change stream's end for a read_committed consumer (its last stable offset);
 *   <li>the view topic from its beginning to its end, then on to a marker (the row of no
 *       values): the latest value per key, a tombstone removing its row; the marker says the
 *       view is the result of registration R after transaction T;
 *   <li>the change stream from start: a change joins iff (registration, tx_last) &gt; (R, T).
 * </ol>
 */
public final class ViewConsumer {
  private static final Duration POLL = Duration.ofMillis(200);

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String prefix = args[1];
    String query = args[2];
    File schemas = new File(args[3]);
    Schema key = parse(schemas, "result_key.avsc");
    Schema viewRow = parse(schemas, "view_row.avsc");
    Schema change = parse(schemas, "result_change.avsc");
    BinaryMessageDecoder<GenericRecord> keys = new BinaryMessageDecoder<>(GenericData.get(), key);
    BinaryMessageDecoder<GenericRecord> views =
        new BinaryMessageDecoder<>(GenericData.get(), viewRow);
    BinaryMessageDecoder<GenericRecord> changes =
        new BinaryMessageDecoder<>(GenericData.get(), change);

    try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
      TopicPartition results = new TopicPartition(prefix + ".results." + query, 0);
      TopicPartition view = new TopicPartition(prefix + ".views." + query, 0);
      long start = consumer.endOffsets(List.of(results)).get(results); // Step 1

      // Step 2: the view, to its end and on to a marker.
      consumer.assign(List.of(view));
      consumer.seekToBeginning(List.of(view));
      long end = consumer.endOffsets(List.of(view)).get(view);
      Map<ByteBuffer, byte[]> latest = new HashMap<>();
      boolean atMarker = true;
      while (consumer.position(view) < end || !atMarker) {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(POLL)) {
          GenericRecord rowKey = keys.decode(record.key());
          atMarker = ((List<?>) rowKey.get("values")).isEmpty();
          if (record.value() == null) {
            latest.remove(ByteBuffer.wrap(record.key()));
          } else {
            latest.put(ByteBuffer.wrap(record.key()), record.value());
          }
        }
      }
      Map<String, Long> rows = new TreeMap<>();
      long registration = -1;
      long tx = -1;
      for (byte[] value : latest.values()) {
        GenericRecord row = views.decode(value);
        List<?> values = (List<?>) row.get("values");
        if (values.isEmpty()) {
          registration = (Long) row.get("registration");
          tx = (Long) row.get("tx_last");
        } else {
          rows.put(values.toString(), (Long) row.get("weight"));
        }
      }
      System.out.println("snapshot " + registration + " " + tx);
      System.out.flush();

      // Step 3: the changes after the view, until told to stop, then to the end seen then.
      AtomicBoolean told = new AtomicBoolean();
      Thread stdin = new Thread(() -> {
        try {
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        } catch (Exception ignored) {
          // a closed stdin stops us too
        }
        told.set(true);
      });
      stdin.setDaemon(true);
      stdin.start();
      consumer.assign(List.of(results));
      consumer.seek(results, start);
      long stopAt = Long.MAX_VALUE;
      long lastRegistration = registration;
      long lastTx = tx;
      while (consumer.position(results) < stopAt) {
        if (told.get() && stopAt == Long.MAX_VALUE) {
          stopAt = consumer.endOffsets(List.of(results)).get(results);
        }
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(POLL)) {
          long recordRegistration = header(record, "deltalog.registration");
          GenericRecord row = changes.decode(record.value());
          long txLast = (Long) row.get("tx_last");
          if (header(record, "deltalog.tx_last") != txLast) {
            throw new IllegalStateException("header deltalog.tx_last disagrees with the value");
          }
          if (recordRegistration > registration) {
            throw new IllegalStateException("registered anew: subscribe again");
          }
          if (recordRegistration < registration
              || (recordRegistration == registration && txLast <= tx)) {
            continue; // in the snapshot, or an earlier registration's
          }
          String values = ((List<?>) row.get("values")).toString();
          long weight = rows.getOrDefault(values, 0L) + (Long) row.get("weight");
          if (weight == 0) {
            rows.remove(values);
          } else {
            rows.put(values, weight);
          }
          lastRegistration = recordRegistration;
          lastTx = txLast;
        }
      }
      System.out.println("position " + lastRegistration + " " + lastTx);
      for (Map.Entry<String, Long> row : rows.entrySet()) {
        System.out.println(row.getValue() + "\t" + row.getKey());
      }
    }
  }

  private static Schema parse(File schemas, String name) throws Exception {
    return new Schema.Parser().parse(new File(schemas, name));
  }

  private static long header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header header = record.headers().lastHeader(name);
    return Long.parseLong(new String(header.value(), StandardCharsets.UTF_8));
  }

  private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
    Properties settings = new Properties();
    settings.put("bootstrap.servers", bootstrap);
    settings.put("group.id", "deltalog-jvm-" + UUID.randomUUID());
    settings.put("enable.auto.commit", "false");
    settings.put("isolation.level", "read_committed");
    settings.put("auto.offset.reset", "none");
    return new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  private ViewConsumer() {}
}
