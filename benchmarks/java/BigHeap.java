import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A big, leaking Java heap for benchmarks/hprof.py: a shop's customers in a map, each with an
 * address, attributes and a few orders of line items (arrays, lists, maps, strings, back
 * references), plus the leak: a static registry of sessions nobody ever removes, each holding a
 * buffer and its customer. Everything is reachable (a live dump writes it all).
 *
 * Usage: java -Xmx4g BigHeap CUSTOMERS. It prints "ready PID OBJECTS" once everything is allocated
 * (OBJECTS: the objects it made itself, strings' byte arrays included), then sleeps until it is
 * killed. About 40 objects and 2.3 KB of dump per customer: 480,000 customers give a 1.1 GB dump
 * of 19.3 million objects.
 */
public class BigHeap {
    /** The shop's index: customer id -> customer. */
    static final Map<Long, Customer> CUSTOMERS = new HashMap<>();
    /** The leak: every session ever opened, never removed. */
    static final List<Session> REGISTRY = new ArrayList<>();
    /** A few hundred product codes, shared by all line items. */
    static final String[] SKUS = new String[500];

    static final class Address {
        final String street;
        final String city;
        final int zip;

        Address(String street, String city, int zip) {
            this.street = street;
            this.city = city;
            this.zip = zip;
        }
    }

    static final class LineItem {
        final String sku;
        final int quantity;
        final double price;

        LineItem(String sku, int quantity, double price) {
            this.sku = sku;
            this.quantity = quantity;
            this.price = price;
        }
    }

    static final class Order {
        final long id;
        final int status;
        final LineItem[] items;
        final byte[] payload;
        final Customer owner;

        Order(long id, Customer owner, LineItem[] items, byte[] payload) {
            this.id = id;
            this.status = (int) (id % 5);
            this.owner = owner;
            this.items = items;
            this.payload = payload;
        }
    }

    static final class Customer {
        final long id;
        final String name;
        final String email;
        final Address address;
        final List<Order> orders = new ArrayList<>(4);
        final Map<String, Integer> attributes = new HashMap<>(4);

        Customer(long id, String name, String email, Address address) {
            this.id = id;
            this.name = name;
            this.email = email;
            this.address = address;
        }
    }

    static final class Session {
        final Customer customer;
        final byte[] buffer;
        final long openedAt;

        Session(Customer customer, long openedAt) {
            this.customer = customer;
            this.buffer = new byte[2048];
            this.openedAt = openedAt;
        }
    }

    static final String[] CITIES = {"Lisbon", "Oslo", "Turin", "Ghent", "Lyon", "Graz", "Porto", "Bergen"};

    public static void main(String[] args) throws Exception {
        int customers = args.length > 0 ? Integer.parseInt(args[0]) : 480_000;
        long objects = 0;
        for (int i = 0; i < SKUS.length; i++) {
            SKUS[i] = "SKU-" + (100000 + i);
            objects += 2;
        }
        long orderId = 0;
        for (int i = 0; i < customers; i++) {
            Address address = new Address(i + " Main Street", CITIES[i % CITIES.length], 10000 + i % 90000);
            Customer c = new Customer(i, "customer " + i, "c" + i + "@example.com", address);
            objects += 1 + 2 + 2 + 1 + 2; // customer, name, email (each a String and its byte[]), address, street
            c.attributes.put("tier", i % 3);
            c.attributes.put("visits", i % 97);
            objects += 2 + 2 + 2; // map + table, list + array, two nodes (keys and small Integers are shared)
            for (int k = 0; k < 4; k++) {
                LineItem[] items = new LineItem[3];
                for (int j = 0; j < items.length; j++) {
                    items[j] = new LineItem(SKUS[(i * 7 + k * 3 + j) % SKUS.length], 1 + j, 9.99 * (j + 1));
                }
                c.orders.add(new Order(orderId++, c, items, new byte[64]));
                objects += 1 + 1 + 3 + 1;
            }
            CUSTOMERS.put((long) i, c);
            objects += 2; // the map's node and the Long key
            if (i % 10 == 0) {
                REGISTRY.add(new Session(c, i));
                objects += 2;
            }
        }
        System.out.println("ready " + ProcessHandle.current().pid() + " " + objects);
        System.out.flush();
        Thread.sleep(3_600_000);
    }
}
