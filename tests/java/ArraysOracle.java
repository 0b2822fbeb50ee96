import java.io.BufferedWriter;
import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Iterator;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;

/**
 * An independent reading of a dump's primitive arrays for heapdb's duplicate-objects inspection:
 * VisualVM's heap library (headless, as VisualVMOracle) opens the dump and writes each primitive
 * array's whole contents as a digest, for the test to group them on its own.
 *
 * Usage: java -cp JAR:. ArraysOracle DUMP OUT. OUT gets one tab-separated line per primitive array:
 * "ID CLASS LENGTH RETAINED REACHED DIGEST": RETAINED is VisualVM's retained size, REACHED 1 when
 * it is a GC root or VisualVM finds a path from one (else 0), and DIGEST the SHA-256 of its
 * elements as VisualVM reads them, each followed by a line end.
 */
public class ArraysOracle {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        try (PrintWriter out = new PrintWriter(new BufferedWriter(new FileWriter(args[1])))) {
            for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
                Instance instance = it.next();
                if (!(instance instanceof PrimitiveArrayInstance)) {
                    continue;
                }
                PrimitiveArrayInstance array = (PrimitiveArrayInstance) instance;
                MessageDigest digest = MessageDigest.getInstance("SHA-256");
                for (Object element : array.getValues()) {
                    digest.update((element + "\n").getBytes(StandardCharsets.UTF_8));
                }
                out.println(instance.getInstanceId() + "\t" + instance.getJavaClass().getName() + "\t"
                        + array.getLength() + "\t" + instance.getRetainedSize() + "\t"
                        + (instance.isGCRoot() || instance.getNearestGCRootPointer() != null ? 1 : 0) + "\t"
                        + HexFormat.of().formatHex(digest.digest()));
            }
        }
    }
}
