import java.io.BufferedWriter;
import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;

/**
 * An independent reading of a dump's strings for heapdb's duplicate-strings inspection: VisualVM's
 * heap library (headless, as VisualVMOracle) opens the dump and decodes every java.lang.String
 * from its value array's elements as the library reads them: a char[] as characters, a byte[] by
 * the string's coder (0: one Latin-1 character a byte; 1: UTF-16, two bytes a character, low
 * byte first as x86-64's JVM holds them).
 *
 * Usage: java -cp JAR:. StringsOracle DUMP OUT. OUT gets one tab-separated line per string with a
 * value: "ID LENGTH RETAINED REACHED DIGEST PREFIX": LENGTH in UTF-16 units, RETAINED VisualVM's
 * retained size, REACHED 1 when it is a GC root or VisualVM finds a path from one (else 0), DIGEST
 * the SHA-256 of its characters in UTF-16, PREFIX its first 40 characters' UTF-16 in hex.
 */
public class StringsOracle {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        JavaClass stringClass = heap.getJavaClassByName("java.lang.String");
        try (PrintWriter out = new PrintWriter(new BufferedWriter(new FileWriter(args[1])))) {
            for (Instance string : stringClass.getInstances()) {
                Object value = string.getValueOfField("value");
                if (!(value instanceof PrimitiveArrayInstance)) {
                    continue;
                }
                PrimitiveArrayInstance array = (PrimitiveArrayInstance) value;
                List<String> elements = array.getValues();
                StringBuilder text = new StringBuilder();
                if (array.getJavaClass().getName().equals("char[]")) {
                    for (String c : elements) {
                        text.append(c.charAt(0));
                    }
                } else {
                    Object coder = string.getValueOfField("coder");
                    boolean utf16 = coder != null && Byte.parseByte(coder.toString()) == 1;
                    for (int i = 0; i < elements.size(); i += utf16 ? 2 : 1) {
                        int low = Byte.parseByte(elements.get(i)) & 0xff;
                        text.append(utf16 ? (char) (low | (Byte.parseByte(elements.get(i + 1)) & 0xff) << 8) : (char) low);
                    }
                }
                String content = text.toString();
                byte[] units = content.getBytes(StandardCharsets.UTF_16BE);
                String prefix = content.substring(0, Math.min(40, content.length()));
                out.println(string.getInstanceId() + "\t" + content.length() + "\t" + string.getRetainedSize() + "\t"
                        + (string.isGCRoot() || string.getNearestGCRootPointer() != null ? 1 : 0) + "\t"
                        + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(units)) + "\t"
                        + HexFormat.of().formatHex(prefix.getBytes(StandardCharsets.UTF_16BE)));
            }
        }
    }
}
