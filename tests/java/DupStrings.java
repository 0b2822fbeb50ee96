import java.util.ArrayList;
import java.util.List;

/**
 * A program wasting memory on duplicate strings, for heapdb's duplicate-strings inspection: 3,000
 * requests each keep their own copy of one configuration text of about 1.6 kB built at run time
 * (new String over its characters: LATIN1, each with its own byte[]), 500 keep a copy of one text
 * outside Latin-1 (UTF16), 200 share one text's characters (new String(String): one value array,
 * so only the String objects are copies), and 100 hold one interned text (one object, no copy).
 * Strings that differ in their last character are not copies. It prints "ready <pid> <copies>
 * <config length>" once they are allocated, then sleeps until it is killed.
 */
public class DupStrings {
    static final class Request {
        final String config;
        final String greeting;

        Request(String config, String greeting) {
            this.config = config;
            this.greeting = greeting;
        }
    }

    static final List<Object> HELD = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        int copies = 3000;
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 1600; i++) {
            text.append("service.option.").append(i).append("=value-").append(i * 7).append(';');
        }
        char[] config = text.toString().toCharArray();
        char[] greeting = "Grüße aus Köln, 東京 und Ελλάδα: ✓".toCharArray();
        for (int i = 0; i < copies; i++) {
            HELD.add(new Request(new String(config), i < 500 ? new String(greeting) : null));
        }
        String shared = new String(config, 0, 300);
        for (int i = 0; i < 200; i++) {
            HELD.add(new String(shared));
        }
        String pooled = ("pool-" + copies).intern();
        for (int i = 0; i < 100; i++) {
            HELD.add(("pool-" + copies).intern());
        }
        HELD.add(new String(pooled.toCharArray()));
        for (int i = 0; i < 50; i++) {
            HELD.add("near-copy-" + (char) ('a' + i % 26) + i);
        }
        System.out.println("ready " + ProcessHandle.current().pid() + " " + copies + " " + config.length);
        System.out.flush();
        Thread.sleep(600_000);
    }
}
