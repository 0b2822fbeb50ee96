import java.io.BufferedWriter;
import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;

/**
 * An independent reading of a dump's collections for heapdb's fill inspection: VisualVM's heap
 * library (headless, as VisualVMOracle) opens the dump and writes the raw facts a collection's
 * fill is made of, for the test to work the figures out on its own.
 *
 * Usage: java -cp JAR:. FillOracle DUMP OUT FIELD... OUT gets tab-separated lines: "c CLASS SUPER"
 * per class (SUPER empty for none); per instance the root reaches, "i ID CLASS", then "f ID FIELD
 * VALUE" for each of the FIELDs it holds (a reference as the id it holds, 0 for null; a number as
 * Java prints it); per object array the root reaches, "a ID CLASS LENGTH NONNULL".
 */
public class FillOracle {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        Set<String> wanted = new HashSet<>(Arrays.asList(args).subList(2, args.length));
        try (PrintWriter out = new PrintWriter(new BufferedWriter(new FileWriter(args[1])))) {
            for (JavaClass cls : heap.getAllClasses()) {
                JavaClass parent = cls.getSuperClass();
                out.println("c\t" + cls.getName() + "\t" + (parent == null ? "" : parent.getName()));
            }
            for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
                Instance instance = it.next();
                if (!instance.isGCRoot() && instance.getNearestGCRootPointer() == null) {
                    continue;
                }
                long id = instance.getInstanceId();
                String type = instance.getJavaClass().getName();
                if (instance instanceof ObjectArrayInstance) {
                    List<Instance> elements = ((ObjectArrayInstance) instance).getValues();
                    int nonNull = 0;
                    for (Instance element : elements) {
                        if (element != null) {
                            nonNull++;
                        }
                    }
                    out.println("a\t" + id + "\t" + type + "\t" + elements.size() + "\t" + nonNull);
                } else if (!(instance.getJavaClass().isArray())) {
                    out.println("i\t" + id + "\t" + type);
                    for (FieldValue value : instance.getFieldValues()) {
                        String name = value.getField().getName();
                        if (!wanted.contains(name) || value.getField().isStatic()) {
                            continue;
                        }
                        String text;
                        if (value instanceof ObjectFieldValue) {
                            Instance target = ((ObjectFieldValue) value).getInstance();
                            text = target == null ? "0" : Long.toString(target.getInstanceId());
                        } else {
                            text = value.getValue();
                        }
                        out.println("f\t" + id + "\t" + name + "\t" + text);
                    }
                }
            }
        }
    }
}
