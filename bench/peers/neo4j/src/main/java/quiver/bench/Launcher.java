package quiver.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.neo4j.cli.AdminTool;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Neo4j Community, embedded, for the Pokec peer benchmark.
 *
 * <pre>
 *   Launcher import --home DIR --nodes FILE --relationships FILE
 *       bulk-loads the data set with Neo4j's own importer (what `neo4j-admin database import
 *       full` runs; the 2018 benchmark used its predecessor, neo4j-import)
 *   Launcher serve --home DIR --bolt-port PORT [--pagecache-mib N]
 *       opens the database with Bolt on 127.0.0.1:PORT, prints "ready" once it answers,
 *       and shuts down cleanly when standard input closes or on SIGTERM
 * </pre>
 *
 * Authentication stays off, as in the benchmark's Neo4j configuration.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage("missing command");
        }
        String command = args[0];
        Path home = Path.of(option(args, "--home", null)).toAbsolutePath();
        switch (command) {
            case "import" -> System.exit(importData(home, args));
            case "serve" -> serve(home, args);
            default -> usage("unknown command " + command);
        }
    }

    private static int importData(Path home, String[] args) throws IOException {
        Path conf = home.resolve("conf");
        Files.createDirectories(conf);
        Path nodes = Path.of(option(args, "--nodes", null)).toAbsolutePath();
        Path relationships = Path.of(option(args, "--relationships", null)).toAbsolutePath();
        List<String> command = new ArrayList<>(List.of(
                "database", "import", "full",
                "--nodes=PROFILES=" + nodes,
                "--relationships=RELATIONS=" + relationships,
                "--delimiter=TAB",
                "--quote=\u0001",
                "--id-type=STRING",
                "--overwrite-destination=true",
                "--report-file=" + home.resolve("import.report"),
                "--threads=" + Runtime.getRuntime().availableProcessors(),
                "neo4j"));
        return AdminTool.execute(new ExecutionContext(home, conf), command.toArray(String[]::new));
    }

    private static void serve(Path home, String[] args) throws IOException {
        int port = Integer.parseInt(option(args, "--bolt-port", null));
        long pagecacheMib = Long.parseLong(option(args, "--pagecache-mib", "2048"));
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pagecacheMib))
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(dbms::shutdown));
        // Touch the database once so that "ready" means queries are answered.
        dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME)
                .executeTransactionally("RETURN 1");
        System.out.println("ready bolt://127.0.0.1:" + port);
        System.out.flush();
        // Bounded by the parent: it closes our standard input (or sends SIGTERM) to stop us.
        while (System.in.read() >= 0) {
            // ignore anything written to us
        }
        dbms.shutdown();
    }

    private static String option(String[] args, String name, String fallback) {
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        if (fallback == null) {
            usage("missing " + name);
        }
        return fallback;
    }

    private static void usage(String problem) {
        System.err.println("neo4j launcher: " + problem);
        System.err.println("usage: Launcher import --home DIR --nodes FILE --relationships FILE");
        System.err.println("       Launcher serve --home DIR --bolt-port PORT [--pagecache-mib N]");
        System.exit(2);
    }
}
