// Word lists the generator draws from. Passed to SQL as array parameters and indexed by a hash of
// the row number, so every value stays deterministic. Lists are split from strings: one line each.

export const FIRST_NAMES =
  'Ana Lucía María Carmen Laura Elena Sofía Paula Marta Isabel Antonio José Manuel Francisco David Javier Daniel Carlos Miguel Pablo Emma Oliver Hannah Lukas Chloé Louis Giulia Marco Sven Ingrid'.split(
    ' ',
  );

export const LAST_NAMES =
  'García Fernández González Rodríguez López Martínez Sánchez Pérez Gómez Martín Jiménez Ruiz Hernández Díaz Moreno Muñoz Álvarez Romero Navarro Torres Smith Müller Dubois Rossi Johansson Jensen Brown Schmidt Bernard'.split(
    ' ',
  );

export const COMPANY_WORDS =
  'Costa Sol Mediterráneo Norte Levante Atlántico Sierra Bahía Puerto Real Imperial Premium Express Ejecutivo Azul Dorado'.split(
    ' ',
  );

export const CUSTOMER_KINDS =
  'Hotel,Agencia de viajes,Viajes,Apartamentos,Club de golf,Clínica,Bufete,Resort,Eventos,Consulado'.split(
    ',',
  );

export const GROUP_NAMES = ['Hoteles', 'Agencias', 'Corporativo', 'Cruceros', 'Eventos', 'Touroperadores'];

export const DRIVER_STATUSES = ['available', 'busy', 'off_duty', 'on_leave'];

export const VEHICLE_MODELS: { model: string; category: string; seats: number; luggage: number }[] = [
  { model: 'Mercedes-Benz Clase E', category: 'sedan', seats: 4, luggage: 3 },
  { model: 'Toyota Corolla', category: 'sedan', seats: 4, luggage: 2 },
  { model: 'Skoda Superb', category: 'sedan', seats: 4, luggage: 3 },
  { model: 'Tesla Model 3', category: 'sedan', seats: 4, luggage: 2 },
  { model: 'Mercedes-Benz Clase S', category: 'sedan_vip', seats: 3, luggage: 3 },
  { model: 'BMW Serie 7', category: 'sedan_vip', seats: 3, luggage: 3 },
  { model: 'Mercedes-Benz Vito', category: 'van', seats: 8, luggage: 8 },
  { model: 'Ford Tourneo Custom', category: 'van', seats: 8, luggage: 7 },
  { model: 'Volkswagen Caravelle', category: 'van', seats: 7, luggage: 7 },
  { model: 'Mercedes-Benz Clase V', category: 'van_vip', seats: 6, luggage: 6 },
];

export const ECO_LABELS = ['0', 'ECO', 'C', 'B'];
export const PROPULSIONS = ['electric', 'hybrid', 'diesel', 'petrol'];

/** The first AIRPORTS entries are airports: a booking from or to one carries a flight. */
export const AIRPORTS = 10;
export const PLACES: { address: string; lat: number; lng: number }[] = [
  { address: 'Aeropuerto de Málaga-Costa del Sol T2', lat: 36.6749, lng: -4.4991 },
  { address: 'Aeropuerto Adolfo Suárez Madrid-Barajas T4', lat: 40.4919, lng: -3.5938 },
  { address: 'Aeropuerto Josep Tarradellas Barcelona-El Prat T1', lat: 41.2889, lng: 2.0733 },
  { address: 'Aeropuerto de Palma de Mallorca', lat: 39.5517, lng: 2.7388 },
  { address: 'Aeropuerto de Alicante-Elche', lat: 38.2822, lng: -0.5582 },
  { address: 'Aeropuerto de Valencia', lat: 39.4893, lng: -0.4816 },
  { address: 'Aeropuerto de Sevilla', lat: 37.418, lng: -5.8931 },
  { address: 'Aeropuerto de Bilbao', lat: 43.3011, lng: -2.9106 },
  { address: 'Aeropuerto de Tenerife Sur', lat: 28.0445, lng: -16.5725 },
  { address: 'Aeropuerto de Gran Canaria', lat: 27.9319, lng: -15.3866 },
  { address: 'Estación de Madrid Puerta de Atocha', lat: 40.4066, lng: -3.6892 },
  { address: 'Estación de Barcelona Sants', lat: 41.3792, lng: 2.1402 },
  { address: 'Estación de Sevilla Santa Justa', lat: 37.392, lng: -5.9752 },
  { address: 'Estación de Málaga María Zambrano', lat: 36.7116, lng: -4.4323 },
  { address: 'Estación de Valencia Joaquín Sorolla', lat: 39.4593, lng: -0.3834 },
  { address: 'Puerto de Barcelona, Terminal de Cruceros D', lat: 41.3712, lng: 2.1798 },
  { address: 'Puerto de Málaga, Terminal de Cruceros', lat: 36.7104, lng: -4.4152 },
  { address: 'Hotel Mirador, Avenida del Mar 12, Marbella', lat: 36.5101, lng: -4.8825 },
  { address: 'Hotel Puerta del Sol, Calle Mayor 3, Madrid', lat: 40.4168, lng: -3.7038 },
  { address: 'Paseo de la Castellana 100, Madrid', lat: 40.4437, lng: -3.6915 },
  { address: 'Passeig de Gràcia 55, Barcelona', lat: 41.3931, lng: 2.1636 },
  { address: 'Puerto Banús, Marbella', lat: 36.4847, lng: -4.9528 },
  { address: 'Calle Larios 8, Málaga', lat: 36.7196, lng: -4.4214 },
  { address: 'Playa de Palma, Mallorca', lat: 39.5283, lng: 2.7364 },
  { address: 'Benidorm, Avenida del Mediterráneo 40', lat: 38.5377, lng: -0.1206 },
  { address: 'Plaza de España, Sevilla', lat: 37.3772, lng: -5.9869 },
  { address: 'Ciudad de las Artes y las Ciencias, Valencia', lat: 39.4549, lng: -0.3505 },
  { address: 'Museo Guggenheim, Bilbao', lat: 43.2687, lng: -2.934 },
  { address: 'Costa Adeje, Tenerife', lat: 28.0868, lng: -16.7344 },
  { address: 'Maspalomas, Gran Canaria', lat: 27.7606, lng: -15.586 },
  { address: 'Estepona, Puerto Deportivo', lat: 36.4205, lng: -5.1497 },
  { address: 'Sotogrande, San Roque', lat: 36.2871, lng: -5.2789 },
];

export const AIRLINES = ['IB', 'VY', 'UX', 'FR', 'U2', 'LH', 'BA', 'AF', 'KL', 'LX', 'SK', 'TP'];
export const PAYMENT_MODES = ['credit', 'card', 'cash', 'transfer'];
export const CHAT_LINES =
  'Estoy en la salida de llegadas,Llego en 5 minutos,El vuelo viene con retraso,Esperando en el punto de encuentro'.split(
    ',',
  );
