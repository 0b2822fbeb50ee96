package org.heapdb.neo4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.graphdb.Entity;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.UserFunction;

/**
 * Bulk writes for heapdb's loader (loader/store/bulk.py holds the other side of this protocol).
 *
 * <p>A batch arrives as one byte array of little-endian int64 rows, one column per property, plus a
 * table of the batch's distinct strings (their UTF-8 bytes end to end, and where each ends: a list
 * of Cypher strings would be checked one by one on the way in, a tenth of the write); writing it here, through the embedded API in the calling
 * transaction, skips what a Cypher UNWIND pays per row (planning the map, evaluating each
 * expression, an index seek per relationship end). Relationships name their ends by the internal
 * node ids {@link #createNodes} returned, which are stable while the nodes exist: the loader keeps
 * them for the duration of one load and never stores them.
 */
public class BulkWrite {
    /** Bumped whenever a signature or the row encoding changes; the loader checks it first. */
    public static final long PROTOCOL = 3;

    /** A cell with no value: the property is not set. */
    public static final long NULL = Long.MIN_VALUE;

    /**
     * Column kinds: an int64 value, an index into the batch's strings, a boolean (0 or 1), or an
     * index into the batch's lists of int64 (a node's children in the dominator tree, say).
     */
    public static final int INTEGER = 0, TEXT = 1, BOOLEAN = 2, INTEGERS = 3;

    @Context public Transaction tx;

    public static class Created {
        public byte[] ids;

        public Created(byte[] ids) {
            this.ids = ids;
        }
    }

    public static class Count {
        public long count;

        public Count(long count) {
            this.count = count;
        }
    }

    @UserFunction(name = "heapdb.protocol")
    @Description("The version of heapdb's bulk-write protocol this plugin speaks.")
    public long protocol() {
        return PROTOCOL;
    }

    @SuppressWarnings("deprecation") // Node.getId: internal ids are what relationships are created by
    @Procedure(name = "heapdb.createNodes", mode = Mode.WRITE)
    @Description("Create one node per row of int64 columns; yields their internal ids as int64 bytes.")
    public Stream<Created> createNodes(
            @Name("label") String label,
            @Name("fixed") Map<String, Object> fixed,
            @Name("keys") List<String> keys,
            @Name("kinds") List<Long> kinds,
            @Name("rows") byte[] rows,
            @Name("strings") byte[] strings,
            @Name("stringEnds") byte[] stringEnds,
            @Name("lists") byte[] lists,
            @Name("listEnds") byte[] listEnds) {
        Columns columns = new Columns(keys, kinds, rows, strings, stringEnds, lists, listEnds, 0);
        Label nodeLabel = Label.label(label);
        ByteBuffer out = ByteBuffer.allocate(columns.rows * Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int row = 0; row < columns.rows; row++) {
            // The label comes last: a node without it is in no index, so setting its properties one
            // by one updates no index state, and adding the label indexes the whole node once.
            Node node = tx.createNode();
            fixed.forEach(node::setProperty);
            columns.set(node, row);
            node.addLabel(nodeLabel);
            out.putLong(node.getId());
        }
        return Stream.of(new Created(out.array()));
    }

    @SuppressWarnings("deprecation") // Transaction.getNodeById: see createNodes
    @Procedure(name = "heapdb.createRelationships", mode = Mode.WRITE)
    @Description("Create one relationship per row (start node id, end node id, index into types, then the property columns).")
    public Stream<Count> createRelationships(
            @Name("types") List<String> types,
            @Name("keys") List<String> keys,
            @Name("kinds") List<Long> kinds,
            @Name("rows") byte[] rows,
            @Name("strings") byte[] strings,
            @Name("stringEnds") byte[] stringEnds) {
        Columns columns = new Columns(keys, kinds, rows, strings, stringEnds, new byte[0], new byte[0], 3);
        RelationshipType[] relationshipTypes = new RelationshipType[types.size()];
        for (int i = 0; i < relationshipTypes.length; i++) {
            relationshipTypes[i] = RelationshipType.withName(types.get(i));
        }
        for (int row = 0; row < columns.rows; row++) {
            Node start = tx.getNodeById(columns.lead(row, 0));
            Node end = tx.getNodeById(columns.lead(row, 1));
            long type = columns.lead(row, 2);
            if (type < 0 || type >= relationshipTypes.length) {
                throw new IllegalArgumentException("row " + row + ": relationship type " + type + " is not in the " + relationshipTypes.length + " types given");
            }
            columns.set(start.createRelationshipTo(end, relationshipTypes[(int) type]), row);
        }
        return Stream.of(new Count(columns.rows));
    }

    /** A batch's rows: {@code lead} leading int64 cells, then one cell per property column. */
    private static final class Columns {
        final String[] keys;
        final int[] kinds;
        final LongBuffer cells;
        final String[] strings;
        final LongBuffer listItems;
        final long[] listEnds;
        final int lead;
        final int width;
        final int rows;

        Columns(List<String> keys, List<Long> kinds, byte[] rows, byte[] strings, byte[] stringEnds, byte[] lists, byte[] listEnds, int lead) {
            if (keys.size() != kinds.size()) {
                throw new IllegalArgumentException(keys.size() + " keys but " + kinds.size() + " kinds");
            }
            this.keys = keys.toArray(new String[0]);
            this.kinds = new int[this.keys.length];
            for (int i = 0; i < this.kinds.length; i++) {
                long kind = kinds.get(i);
                if (kind != INTEGER && kind != TEXT && kind != BOOLEAN && kind != INTEGERS) {
                    throw new IllegalArgumentException("column " + this.keys[i] + ": unknown kind " + kind);
                }
                this.kinds[i] = (int) kind;
            }
            this.strings = decode(strings, stringEnds);
            this.listItems = int64s(lists, "list items").asLongBuffer();
            LongBuffer ends = int64s(listEnds, "list ends").asLongBuffer();
            this.listEnds = new long[ends.remaining()];
            ends.get(this.listEnds);
            long start = 0;
            for (int i = 0; i < this.listEnds.length; i++) {
                if (this.listEnds[i] < start || this.listEnds[i] > this.listItems.limit()) {
                    throw new IllegalArgumentException("list " + i + " ends at " + this.listEnds[i] + ", outside " + start + ".." + this.listItems.limit());
                }
                start = this.listEnds[i];
            }
            this.lead = lead;
            this.width = lead + this.keys.length;
            int bytesPerRow = width * Long.BYTES;
            if (width == 0 || rows.length % bytesPerRow != 0) {
                throw new IllegalArgumentException(rows.length + " bytes are not whole rows of " + width + " int64 cells");
            }
            this.rows = rows.length / bytesPerRow;
            this.cells = ByteBuffer.wrap(rows).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
        }

        static ByteBuffer int64s(byte[] bytes, String what) {
            if (bytes.length % Long.BYTES != 0) {
                throw new IllegalArgumentException(bytes.length + " bytes of " + what + " are not whole int64 cells");
            }
            return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        }

        /** The strings whose UTF-8 bytes lie end to end in {@code bytes}, string i ending at int64 {@code ends[i]}. */
        static String[] decode(byte[] bytes, byte[] ends) {
            if (ends.length % Long.BYTES != 0) {
                throw new IllegalArgumentException(ends.length + " bytes of string ends are not whole int64 cells");
            }
            LongBuffer at = ByteBuffer.wrap(ends).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
            String[] out = new String[at.remaining()];
            int start = 0;
            for (int i = 0; i < out.length; i++) {
                long end = at.get(i);
                if (end < start || end > bytes.length) {
                    throw new IllegalArgumentException("string " + i + " ends at " + end + ", outside " + start + ".." + bytes.length);
                }
                out[i] = new String(bytes, start, (int) end - start, StandardCharsets.UTF_8);
                start = (int) end;
            }
            return out;
        }

        long lead(int row, int column) {
            return cells.get(row * width + column);
        }

        void set(Entity entity, int row) {
            int base = row * width + lead;
            for (int column = 0; column < keys.length; column++) {
                long value = cells.get(base + column);
                if (value == NULL) {
                    continue;
                }
                switch (kinds[column]) {
                    case INTEGER -> entity.setProperty(keys[column], value);
                    case TEXT -> {
                        if (value < 0 || value >= strings.length) {
                            throw new IllegalArgumentException("row " + row + ", column " + keys[column] + ": string " + value + " is not in the " + strings.length + " strings given");
                        }
                        entity.setProperty(keys[column], strings[(int) value]);
                    }
                    case INTEGERS -> {
                        if (value < 0 || value >= listEnds.length) {
                            throw new IllegalArgumentException("row " + row + ", column " + keys[column] + ": list " + value + " is not in the " + listEnds.length + " lists given");
                        }
                        int from = value == 0 ? 0 : (int) listEnds[(int) value - 1];
                        long[] items = new long[(int) listEnds[(int) value] - from];
                        listItems.get(from, items);
                        entity.setProperty(keys[column], items);
                    }
                    default -> entity.setProperty(keys[column], value != 0);
                }
            }
        }
    }
}
