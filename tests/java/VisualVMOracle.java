import java.io.File;
import java.io.PrintWriter;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;

/**
 * heapdb's independent oracle for Java heap dumps: VisualVM's heap library (the jar Debian's
 * visualvm package ships, used headless) opens a dump and writes what it computes.
 *
 * Usage: java -cp JAR:. VisualVMOracle DUMP OUT. OUT gets tab-separated lines:
 * "i ID CLASS SIZE RETAINED DEPTH" per instance (every object VisualVM lists, class objects
 * included), where DEPTH is the length of the getNearestGCRootPointer chain to a GC root (0 for a
 * root, -1 when VisualVM finds no path), and "c CLASS COUNT BYTES LOADER" per class (its histogram
 * line, and its class loader's instance id: 0 for the bootstrap loader).
 * Primitive values follow each instance: "v ID TYPE NAME VALUE" per primitive field (inherited ones
 * too), "a ID LENGTH V1 V2 ..." for a primitive array with its first 16 elements; tabs, line ends
 * and backslashes in a value are escaped as \t, \n, \r and \\.
 */
public class VisualVMOracle {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        Map<Long, Integer> depths = new HashMap<>();
        try (PrintWriter out = new PrintWriter(new BufferedWriter(new FileWriter(args[1])))) {
            for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
                Instance instance = it.next();
                out.print("i\t");
                out.print(instance.getInstanceId());
                out.print('\t');
                out.print(instance.getJavaClass().getName());
                out.print('\t');
                out.print(instance.getSize());
                out.print('\t');
                out.print(instance.getRetainedSize());
                out.print('\t');
                out.println(depth(instance, depths));
                values(out, instance);
            }
            for (JavaClass cls : heap.getAllClasses()) {
                Instance loader = cls.getClassLoader();
                out.println("c\t" + cls.getName() + "\t" + cls.getInstancesCount() + "\t" + cls.getAllInstancesSize()
                    + "\t" + (loader == null ? 0 : loader.getInstanceId()));
            }
        }
    }

    static void values(PrintWriter out, Instance instance) {
        if (instance instanceof PrimitiveArrayInstance) {
            PrimitiveArrayInstance array = (PrimitiveArrayInstance) instance;
            out.print("a\t" + instance.getInstanceId() + "\t" + array.getLength());
            java.util.List<String> elements = array.getValues();
            for (int k = 0; k < Math.min(16, elements.size()); k++) {
                out.print("\t" + escape(elements.get(k)));
            }
            out.println();
        } else if (!(instance instanceof ObjectArrayInstance)) {
            for (FieldValue value : instance.getFieldValues()) {
                if (!(value instanceof ObjectFieldValue)) {
                    out.println("v\t" + instance.getInstanceId() + "\t" + value.getField().getType().getName() + "\t"
                        + value.getField().getName() + "\t" + escape(value.getValue()));
                }
            }
        }
    }

    static String escape(String text) {
        return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r");
    }

    /** The nearest-root chain's length, remembered per object: chains share their tails. */
    static int depth(Instance instance, Map<Long, Integer> depths) {
        java.util.ArrayList<Instance> chain = new java.util.ArrayList<>();
        Instance x = instance;
        int known = -2;
        while (x != null) {
            Integer d = depths.get(x.getInstanceId());
            if (d != null) {
                known = d;
                break;
            }
            if (x.isGCRoot()) {
                known = 0;
                depths.put(x.getInstanceId(), 0);
                break;
            }
            chain.add(x);
            x = x.getNearestGCRootPointer();
        }
        if (known == -2 || known == -1) {
            for (Instance y : chain) {
                depths.put(y.getInstanceId(), -1);
            }
            return -1;
        }
        for (int k = chain.size() - 1; k >= 0; k--) {
            known += 1;
            depths.put(chain.get(k).getInstanceId(), known);
        }
        return depths.get(instance.getInstanceId());
    }
}
