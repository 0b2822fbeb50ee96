import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Hashtable;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Properties;
import java.util.Vector;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A program holding collections of known sizes and capacities, for heapdb's fill inspection
 * (empty, sparse and low-fill collections): each group sits in a static field named for what it
 * holds, so a test finds its members by their holder path. Its first argument scales the groups
 * (the counts below are for 1). It prints "ready <pid>" once they are allocated, then sleeps until
 * it is killed.
 */
public class Fill {
    static final List<Object> EMPTY_DEFAULT = new ArrayList<>(); // ArrayLists never added to: no array of their own
    static final List<Object> EMPTY_PRESIZED = new ArrayList<>(); // ArrayList(100), never added to
    static final List<Object> SPARSE_LISTS = new ArrayList<>(); // ArrayList(1000) holding 3
    static final List<Object> FULL_LISTS = new ArrayList<>(); // ArrayList(10) holding 10
    static final List<Object> EMPTY_MAPS = new ArrayList<>(); // HashMap(): no table until the first put
    static final List<Object> CLEARED_MAPS = new ArrayList<>(); // HashMap grown to 64 slots, then cleared
    static final List<Object> SMALL_MAPS = new ArrayList<>(); // HashMap holding 1 (16 slots)
    static final List<Object> PRESIZED_MAPS = new ArrayList<>(); // HashMap(1024) holding 2
    static final List<Object> SETS = new ArrayList<>(); // HashSet holding 2; LinkedHashMap holding 12
    static final List<Object> OTHERS = new ArrayList<>(); // one of each other kind, sparse
    static final List<Object> ARRAYS = new ArrayList<>(); // Object[100] holding 5, and Object[4] full

    public static void main(String[] args) throws Exception {
        int scale = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        for (int i = 0; i < 30 * scale; i++) {
            EMPTY_DEFAULT.add(new ArrayList<>());
        }
        for (int i = 0; i < 20 * scale; i++) {
            EMPTY_PRESIZED.add(new ArrayList<>(100));
        }
        for (int i = 0; i < 10 * scale; i++) {
            List<Object> list = new ArrayList<>(1000);
            for (int k = 0; k < 3; k++) {
                list.add("s" + i + "-" + k);
            }
            SPARSE_LISTS.add(list);
        }
        for (int i = 0; i < 5 * scale; i++) {
            List<Object> list = new ArrayList<>(10);
            for (int k = 0; k < 10; k++) {
                list.add(k * 1000 + i);
            }
            FULL_LISTS.add(list);
        }
        for (int i = 0; i < 25 * scale; i++) {
            EMPTY_MAPS.add(new HashMap<>());
        }
        for (int i = 0; i < 7 * scale; i++) {
            HashMap<Object, Object> map = new HashMap<>();
            for (int k = 0; k < 40; k++) {
                map.put("c" + k, k);
            }
            map.clear();
            CLEARED_MAPS.add(map);
        }
        for (int i = 0; i < 15 * scale; i++) {
            HashMap<Object, Object> map = new HashMap<>();
            map.put("k" + i, i);
            SMALL_MAPS.add(map);
        }
        for (int i = 0; i < 4 * scale; i++) {
            HashMap<Object, Object> map = new HashMap<>(1024);
            map.put("a" + i, 1);
            map.put("b" + i, 2);
            PRESIZED_MAPS.add(map);
        }
        for (int i = 0; i < 6 * scale; i++) {
            HashSet<Object> set = new HashSet<>();
            set.add("x" + i);
            set.add("y" + i);
            SETS.add(set);
            LinkedHashMap<Object, Object> linked = new LinkedHashMap<>();
            for (int k = 0; k < 12; k++) {
                linked.put("l" + i + "-" + k, k);
            }
            SETS.add(linked);
        }
        for (int i = 0; i < 3 * scale; i++) {
            Vector<Object> vector = new Vector<>(50);
            vector.add("v" + i);
            OTHERS.add(vector);
            ArrayDeque<Object> deque = new ArrayDeque<>(64);
            deque.add("d" + i);
            deque.add("e" + i);
            OTHERS.add(deque);
            Hashtable<Object, Object> table = new Hashtable<>(101);
            table.put("h" + i, i);
            OTHERS.add(table);
            ConcurrentHashMap<Object, Object> concurrent = new ConcurrentHashMap<>(256);
            for (int k = 0; k < 5; k++) {
                concurrent.put("m" + i + "-" + k, k);
            }
            OTHERS.add(concurrent);
            WeakHashMap<Object, Object> weak = new WeakHashMap<>(64);
            weak.put(Fill.class, "w" + i); // a key that stays alive
            OTHERS.add(weak);
            IdentityHashMap<Object, Object> identity = new IdentityHashMap<>(64);
            identity.put(Fill.class, "i" + i);
            OTHERS.add(identity);
            Properties properties = new Properties();
            properties.setProperty("p" + i, "q");
            OTHERS.add(properties);
        }
        for (int i = 0; i < 8 * scale; i++) {
            Object[] array = new Object[100];
            for (int k = 0; k < 5; k++) {
                array[k * 20] = "o" + i + "-" + k;
            }
            ARRAYS.add(array);
            ARRAYS.add(new Object[] {"f" + i, "g" + i, "h" + i, "j" + i});
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(600_000);
    }
}
