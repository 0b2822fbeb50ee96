import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;

/**
 * A program holding secrets, for heapdb's redaction tests: an API key (a String, its characters in
 * a byte[]), a password (a char[]) and a PIN (an int field), each made at run time from random
 * bytes. It prints "ready <pid> <api key> <password> <pin>" once they are allocated, then sleeps
 * until it is killed.
 */
public class Secrets {
    static final class Account {
        final String apiKey;
        final char[] password;
        final int pin;

        Account(String apiKey, char[] password, int pin) {
            this.apiKey = apiKey;
            this.password = password;
            this.pin = pin;
        }
    }

    static final Map<String, Account> BY_KEY = new HashMap<>();

    static String hex(SecureRandom random, int bytes) {
        byte[] raw = new byte[bytes];
        random.nextBytes(raw);
        StringBuilder out = new StringBuilder();
        for (byte b : raw) {
            out.append(String.format("%02x", b));
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        SecureRandom random = new SecureRandom();
        String apiKey = "sk_live_" + hex(random, 12);
        String password = "pw-" + hex(random, 8);
        int pin = 100000 + random.nextInt(900000);
        BY_KEY.put(apiKey, new Account(apiKey, password.toCharArray(), pin));
        System.out.println("ready " + ProcessHandle.current().pid() + " " + apiKey + " " + password + " " + pin);
        System.out.flush();
        Thread.sleep(600_000);
    }
}
