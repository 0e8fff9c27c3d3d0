<?php
// Laravel (Debian's Illuminate 8.83 Database) running a queued job's handle(): every query of
// the connection carries a sqlcommenter comment naming the application and the job, added by
// a beforeExecuting hook the way Laravel SQL-commenter packages do (the query is passed by
// reference). The job locks a row, updates another and leaves its transaction idle.
// Same protocol as django_app.py:  php laravel_job.php pgsql|mysql HOST PORT DATABASE TABLE [emulate]
// `emulate`: PDO::ATTR_EMULATE_PREPARES on (the statement text, with its comment, stays in
// pg_stat_activity; without it PDO's DEALLOCATE is the last statement PostgreSQL shows).

require '/usr/share/php/Illuminate/Database/autoload.php';

use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Database\Connection;

[$_, $driver, $host, $port, $database, $table] = $argv;
$emulate = ($argv[6] ?? '') === 'emulate';

final class QueryTags
{
    public static array $context = [];

    public static function comment(): string
    {
        $pairs = [];
        $tags = self::$context;
        ksort($tags);
        foreach ($tags as $k => $v) {
            $pairs[] = rawurlencode($k) . "='" . str_replace("'", "\\'", rawurlencode($v)) . "'";
        }
        return $pairs ? '/*' . implode(',', $pairs) . '*/' : '';
    }
}

final class ReindexCatalog
{
    public function __construct(private string $table) {}

    public function handle(Connection $db): void
    {
        $db->beginTransaction();
        $db->table($this->table)->where('id', 1)->lockForUpdate()->first();
        say('STEP1');
        $db->table($this->table)->where('id', 2)->update(['s' => 'reindexed']);
        say('READY');
        $db->rollBack();
    }
}

function say(string $word): void
{
    echo $word, "\n";
    fflush(STDOUT);
    fgets(STDIN);
}

$capsule = new Capsule();
$capsule->addConnection([
    'driver' => $driver, 'host' => $host, 'port' => (int) $port, 'database' => $database,
    'username' => $driver === 'pgsql' ? 'postgres' : 'root', 'password' => '',
    'charset' => $driver === 'pgsql' ? 'utf8' : 'utf8mb4', 'prefix' => '',
    'options' => $emulate ? [PDO::ATTR_EMULATE_PREPARES => true] : [],
]);
$db = $capsule->getConnection();
$db->beforeExecuting(function (string &$query): void {
    $query .= ' ' . QueryTags::comment();
});
$id = $db->selectOne($driver === 'pgsql' ? 'select pg_backend_pid() as id' : 'select connection_id() as id');
echo 'ID ', $id->id, "\n";
fflush(STDOUT);

QueryTags::$context = ['application' => 'Shop', 'job' => ReindexCatalog::class,
                       'framework' => 'laravel:8.83'];
(new ReindexCatalog($table))->handle($db);
QueryTags::$context = [];
echo "DONE 200\n";
