<?php
// Real Laravel (Debian's Illuminate 8.83) as a database-queue client for dbwatch's live tests:
// `php worker.php [--version=STR] DATABASE TABLE MODE [N]`, MODE one of create, push N, work N.
// --version sets the connection's `version` config, which DatabaseQueue::getLockForPopping reads
// instead of the server's (e.g. '10.5.0-MariaDB' makes Laravel claim with plain FOR UPDATE).

require '/usr/share/php/Illuminate/Database/autoload.php';
require '/usr/share/php/Illuminate/Queue/autoload.php';

use Illuminate\Container\Container;
use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Queue\DatabaseQueue;

function usage(string $why): never
{
    fwrite(STDERR, "worker.php: $why\n"
        . "usage: php worker.php [--version=STR] DATABASE TABLE create|push N|work N\n");
    exit(2);
}

$args = array_slice($argv, 1);
$version = null;
if ($args && str_starts_with($args[0], '--version=')) {
    $version = substr(array_shift($args), strlen('--version='));
}
if (count($args) < 3) {
    usage('missing arguments');
}
[$database, $table, $mode] = $args;
$n = (int) ($args[3] ?? 1);

$config = [
    'driver' => 'mysql', 'host' => '127.0.0.1', 'port' => 3306, 'database' => $database,
    'username' => 'root', 'password' => '', 'charset' => 'utf8mb4',
    'collation' => 'utf8mb4_unicode_ci', 'prefix' => '',
];
if ($version !== null) {
    $config['version'] = $version;
}
$capsule = new Capsule();
$capsule->addConnection($config);
$connection = $capsule->getConnection();

$queue = new DatabaseQueue($connection, $table, 'default', 60);
$queue->setContainer(new Container());
$queue->setConnectionName('database');

switch ($mode) {
    case 'create':
        // Laravel 8.x's `queue:table` migration, verbatim in shape.
        $connection->getSchemaBuilder()->create($table, function (Blueprint $t) {
            $t->bigIncrements('id');
            $t->string('queue')->index();
            $t->longText('payload');
            $t->unsignedTinyInteger('attempts');
            $t->unsignedInteger('reserved_at')->nullable();
            $t->unsignedInteger('available_at');
            $t->unsignedInteger('created_at');
        });
        echo "created $table\n";
        break;
    case 'push':
        for ($i = 0; $i < $n; $i++) {
            // A payload of the shape Queue::createPayload builds; nothing here runs it.
            $payload = json_encode([
                'uuid' => sprintf('00000000-0000-4000-8000-%012d', $i),
                'displayName' => 'DbwatchNoop', 'job' => 'DbwatchNoop@handle',
                'maxTries' => null, 'maxExceptions' => null, 'backoff' => null,
                'timeout' => null, 'retryUntil' => null, 'data' => ['n' => $i],
            ]);
            $queue->pushRaw($payload);
        }
        echo "pushed $n\n";
        break;
    case 'work':
        $done = 0;
        while ($done < $n && ($job = $queue->pop()) !== null) {
            $job->delete();   // DatabaseQueue::deleteReserved
            $done++;
        }
        echo "worked $done\n";
        break;
    default:
        usage("unknown mode '$mode'");
}
